package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

const batchPlan = `version: 1
name: b
endpoints:
  sim: {simulator: {ttft_ms: 5}}
prompts:
  p: {synthetic: {input_tokens: 64}}
  f: {inline: ["a text", "another"]}
stages:
`

// TestBatchStages: an embeddings, rerank or score stage loads with its
// defaults (one input, eight documents of the prompt's length, no output
// tokens, no mode), and what does not apply to it is a plan error at its
// position.
func TestBatchStages(t *testing.T) {
	p := mustLoad(t, batchPlan+`  - {name: e, endpoint: sim, prompts: p, api: embeddings, concurrency: [1], checks: [{expr: "e2e_p95_ms < 100 && input_tps_total > 0"}]}
  - {name: r, endpoint: sim, prompts: p, api: rerank, concurrency: [1]}
  - {name: b, endpoint: sim, prompts: f, api: embeddings, inputs_per_request: 16, concurrency: [1]}
  - {name: s, endpoint: sim, prompts: f, api: score, documents_per_request: 3, document_tokens: 20, concurrency: [1]}
  - {name: c, endpoint: sim, prompts: p, concurrency: [1]}
`, Options{})
	e, r, b, sc, c := p.LoadPlan(p.Stages[0]), p.LoadPlan(p.Stages[1]), p.LoadPlan(p.Stages[2]), p.LoadPlan(p.Stages[3]), p.LoadPlan(p.Stages[4])
	if e.InputsPerRequest != 1 || !e.OutputTokens.IsZero() || e.DocumentsPerRequest != 0 {
		t.Errorf("embeddings: inputs %d output %v documents %d", e.InputsPerRequest, e.OutputTokens, e.DocumentsPerRequest)
	}
	if r.DocumentsPerRequest != DefaultDocumentsPerRequest || r.DocumentTokens != nil || r.InputsPerRequest != 0 {
		t.Errorf("rerank: documents %d of %v, inputs %d", r.DocumentsPerRequest, r.DocumentTokens, r.InputsPerRequest)
	}
	if b.InputsPerRequest != 16 {
		t.Errorf("inputs_per_request %d", b.InputsPerRequest)
	}
	if sc.DocumentsPerRequest != 3 || sc.DocumentTokens == nil || sc.DocumentTokens.Fixed != 20 || !sc.OutputTokens.IsZero() {
		t.Errorf("score: documents %d of %v, output %v", sc.DocumentsPerRequest, sc.DocumentTokens, sc.OutputTokens)
	}
	for _, l := range []*LoadPlan{e, r, b, sc} {
		// No mode; and no length left free for natural mode's numbers.
		if l.Mode != "" || !l.Pinned {
			t.Errorf("%s: mode %q pinned %v on an API without output", l.Name, l.Mode, l.Pinned)
		}
	}
	if c.Mode != ModePinned || !c.Pinned {
		t.Errorf("chat: mode %q pinned %v", c.Mode, c.Pinned)
	}
	for _, c := range []struct{ stage, want string }{
		{`{name: x, endpoint: sim, prompts: p, api: embeddings, concurrency: [1], checks: [{expr: "ttft_p95_ms < 100 && output_tps_total > 1"}]}`,
			"plan.yaml:9:93: stages[0].checks[0]: check reads ttft_p95_ms, output_tps_total, which api: embeddings does not produce"},
		{`{name: x, endpoint: sim, prompts: p, api: rerank, concurrency: [1], checks: [{scope: stage, expr: "all(points, .tpot_p50_ms < 9)"}]}`,
			"check reads tpot_p50_ms, which api: rerank does not produce"},
		{`{name: x, endpoint: sim, prompts: p, api: chat, inputs_per_request: 2, concurrency: [1]}`,
			"plan.yaml:9:73: stages[0]: inputs_per_request applies to api: embeddings only (this stage's api is chat)"},
		{`{name: x, endpoint: sim, prompts: p, api: embeddings, documents_per_request: 2, concurrency: [1]}`,
			"documents_per_request applies to api: rerank or score only (this stage's api is embeddings)"},
		{`{name: x, endpoint: sim, prompts: p, api: chat, document_tokens: 9, concurrency: [1]}`,
			"document_tokens applies to api: rerank or score only (this stage's api is chat)"},
		{`{name: x, endpoint: sim, prompts: f, api: score, concurrency: [1]}`,
			"a score stage over prompts that are not synthetic needs document_tokens"},
		{`{name: x, endpoint: sim, prompts: p, api: score, mode: pinned, concurrency: [1]}`,
			"plan.yaml:9:60: stages[0]: mode does not apply to api: score, whose answer has no output tokens"},
		{`{name: x, endpoint: sim, prompts: p, api: score, concurrency: [1], checks: [{expr: "ttfat_p50_ms < 9"}]}`,
			"check reads ttfat_p50_ms, which api: score does not produce"},
		{`{name: x, endpoint: sim, prompts: p, api: embeddings, duration: 1s, search: {over: rate, min: 1, max: 8, targets: [{name: t, expr: "e2e_p95_ms < 9 && ttft_p95_ms < 9"}]}}`,
			"stages[0].search.targets[0]: target reads ttft_p95_ms, which api: embeddings does not produce"},
		{`{name: x, endpoint: sim, prompts: p, api: embeddings, concurrency: [1], checks: [{expr: "e2e_p95_ms < 100", when: "ttft_p50_ms > 5"}]}`,
			"stages[0].checks[0]: check's when: reads ttft_p50_ms, which api: embeddings does not produce"},
		{`{name: x, endpoint: sim, prompts: p, api: embeddings, output_tokens: 9, concurrency: [1]}`,
			"plan.yaml:9:74: stages[0]: output_tokens does not apply to api: embeddings"},
		{`{name: x, endpoint: sim, prompts: p, api: embeddings, inputs_per_request: 5000, concurrency: [1]}`,
			"inputs_per_request must be between 1 and 2048, got 5000"},
		{`{name: x, endpoint: sim, prompts: f, api: rerank, concurrency: [1]}`,
			"a rerank stage over prompts that are not synthetic needs document_tokens"},
		{`{name: x, endpoint: sim, prompts: p, api: rerank, slo: {ttft_ms: 9}, concurrency: [1]}`,
			"api rerank has no first token or output tokens: bound e2e_ms only"},
	} {
		_, err := load(t, batchPlan+"  - "+c.stage+"\n", Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.stage, err, c.want)
		}
	}
}

// TestImagesPlan: an images block loads with its defaults and image files
// from the plan's tree; a bad one is a plan error at its position.
func TestImagesPlan(t *testing.T) {
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82")
	writeImageFile(t, dir, "a.png", png)
	writeImageFile(t, dir, "notes.txt", []byte("not an image"))
	head := `version: 1
name: i
endpoints:
  sim: {simulator: {ttft_ms: 5}}
prompts:
`
	stages := "stages:\n  - {name: s, endpoint: sim, prompts: p, concurrency: [1]}\n"
	p, err := LoadBytes("plan.yaml", []byte(head+"  p: {synthetic: {input_tokens: 8}, images: {width: 64, height: 32}}\n  f: {inline: [hi], images: {files: [a.png], count: 2}}\n"+stages), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im := p.Prompts["p"].Images; im.Count != 1 || im.Format != ImagePNG || im.Width != 64 {
		t.Errorf("images %+v", im)
	}
	if im := p.Prompts["f"].Images; len(im.Loaded) != 1 || im.Loaded[0].MediaType != "image/png" || !bytes.Equal(im.Loaded[0].Data, png) {
		t.Errorf("loaded %+v", im.Loaded)
	}
	for _, c := range []struct{ sets, stage, want string }{
		{"  p: {synthetic: {input_tokens: 8}, images: {width: 64}}\n", "", "plan.yaml:6:45: prompts.p.images: a synthetic image needs width and height"},
		{"  p: {synthetic: {input_tokens: 8}, images: {width: 64, height: 9000}}\n", "", "plan.yaml:6:65: prompts.p.images: height must be between 1 and 4096 pixels, got 9000"},
		{"  p: {synthetic: {input_tokens: 8}, images: {width: 4, height: 4, format: gif}}\n", "", "prompts.p.images.format"},
		{"  p: {synthetic: {input_tokens: 8}, images: {width: 4, height: 4, count: 99}}\n", "", "count must be between 1 and 16, got 99"},
		{"  p: {synthetic: {input_tokens: 8}, images: {files: [notes.txt]}}\n", "", "plan.yaml:6:54: prompts.p.images.files[0]: \"notes.txt\" is not a PNG, JPEG, GIF or WebP image"},
		{"  p: {synthetic: {input_tokens: 8}, images: {files: [../x.png]}}\n", "", "prompts.p.images.files[0]"},
		{"  p: {synthetic: {input_tokens: 8}, images: {files: [a.png], width: 3}}\n", "", "width applies to synthetic images, not files"},
		{"  p: {synthetic: {input_tokens: 8}, images: {width: 4, height: 4, bogus: 1}}\n", "", "bogus"},
		{"  p: {synthetic: {input_tokens: 8}, images: {width: 4, height: 4}}\n", "stages:\n  - {name: s, endpoint: sim, prompts: p, api: completions, concurrency: [1]}\n",
			"stages[0]: prompt set \"p\" has images, which api: completions cannot send (use api: chat or responses)"},
	} {
		st := stages
		if c.stage != "" {
			st = c.stage
		}
		_, err := LoadBytes("plan.yaml", []byte(head+c.sets+st), dir, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", strings.TrimSpace(c.sets), err, c.want)
		}
	}
}

func writeImageFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBatchChecksFollowCatalogue: a check of an embeddings, rerank or score
// stage that reads a metric the catalogue marks as needing output (a first
// token, output tokens) is a plan error naming it; one that reads any other
// metric loads. (runner's TestBatchNullMetrics holds the marks to what an
// embeddings stage produces.)
func TestBatchChecksFollowCatalogue(t *testing.T) {
	marked := 0
	for _, m := range result.Metrics() {
		for _, api := range []string{"embeddings", "rerank", "score"} {
			stage := `{name: x, endpoint: sim, prompts: p, api: ` + api + `, concurrency: [1], checks: [{expr: "` + m.Name + ` != nil"}]}`
			_, err := load(t, batchPlan+"  - "+stage+"\n", Options{})
			want := "check reads " + m.Name + ", which api: " + api + " does not produce"
			switch {
			case m.NeedsOutput && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("%s: %s: got %v, want %s", api, m.Name, err, want)
			case !m.NeedsOutput && err != nil:
				t.Errorf("%s: %s: %v", api, m.Name, err)
			}
		}
		if m.NeedsOutput {
			marked++
		}
	}
	// The ones issue 27's reviewer found accepted, among the rest.
	for _, name := range []string{"energy_per_output_token_mj", "tool_call_rate", "natural_stop", "ttft_p95_ms", "output_tps_total"} {
		if m, ok := result.MetricNamed(name); !ok || !m.NeedsOutput {
			t.Errorf("%s is not marked as needing output", name)
		}
	}
	if marked < 40 {
		t.Errorf("only %d metrics marked as needing output", marked)
	}
}
