package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runnerbench/runner/internal/engines"
)

// llamaWith returns a shared llama-server started with o (embeddings or
// reranking: a server of its own, as llama.cpp wants one per use).
func llamaWith(t testing.TB, name string, o engines.LlamaOptions) *engines.Engine {
	t.Helper()
	r := root(t)
	return pool.Get(t, name, func(ctx context.Context) (*engines.Engine, error) {
		return engines.StartLlama(ctx, r, o)
	})
}

// embedStages is an embeddings stage of one input and one of batches of 4,
// n requests each, over prompt set "synth".
func embedStages(ep string, n int) string {
	return fmt.Sprintf(`
  - {name: one, endpoint: %[1]s, prompts: synth, api: embeddings, concurrency: [2], requests: %[2]d}
  - {name: batch, endpoint: %[1]s, prompts: synth, api: embeddings, inputs_per_request: 4, concurrency: [2], requests: %[2]d}
`, ep, n)
}

// checkEmbeddings holds an embeddings stage's records to what the engine
// counted: every request succeeded with its inputs, its input tokens from
// usage (calibrated to within ±2% a text, or 4 tokens for a short one:
// each text's random nonce tokenizes to a few tokens more or less than the
// probe's), no first token, no output.
func checkEmbeddings(t *testing.T, o outcome, inputs, tokens int) {
	t.Helper()
	noFailures(t, o)
	for _, r := range o.recs {
		if !r.UsageReported || r.Inputs != inputs || r.TTFTMs != nil || r.OutputTokens != 0 {
			t.Errorf("%s seq %d: usage %v inputs %d ttft %v output %d", o.stage.Name, r.Seq, r.UsageReported, r.Inputs, r.TTFTMs, r.OutputTokens)
		}
	}
	// One request of 128 tokens was once 4 off.
	if miss := inputError(o.recs, inputs*tokens); miss > max(0.02, 4/float64(tokens)) {
		t.Errorf("%s: input tokens miss %d by up to %.1f%%", o.stage.Name, inputs*tokens, 100*miss)
	}
	p := o.stage.Points[0]
	if p.InputTPSTotal == nil || *p.InputTPSTotal <= 0 || p.MeanInputsPerRequest == nil || *p.MeanInputsPerRequest != float64(inputs) || p.TTFTP50Ms != nil || p.E2EP50Ms == nil {
		t.Errorf("%s: input_tps_total %s, inputs %s, ttft %s, e2e %s", o.stage.Name, val(p.InputTPSTotal), val(p.MeanInputsPerRequest), val(p.TTFTP50Ms), val(p.E2EP50Ms))
	}
}

// TestLlamaServerEmbeddings: llama-server started with --embeddings
// --pooling mean answers single inputs and batches of 4; prompts calibrated
// with its embeddings probe land within ±2% of 128 tokens a text, and its
// usage is what is recorded.
func TestLlamaServerEmbeddings(t *testing.T) {
	eng := llamaWith(t, "llama-embeddings", engines.LlamaOptions{Embeddings: true})
	for _, o := range run(t, eng, engines.LlamaModel, planFor("llama", 128, embedStages("llama", 8))) {
		inputs := 1
		if o.stage.Name == "batch" {
			inputs = 4
		}
		checkEmbeddings(t, o, inputs, 128)
	}
}

// TestLlamaServerEmbeddingsDefaultBatch: llama-server started as its users
// start it for embeddings (--embeddings --pooling mean, the default batch
// of 512 tokens) refuses an input of about 1,000 tokens, which Runner's
// calibration once probed with: it then fell back to 0.75 tokens a word and
// sent 235.6 tokens for 128 (84% off). Calibrated within what the server
// takes, texts of 128 tokens land within ±2%, and nothing says the length
// is a guess.
func TestLlamaServerEmbeddingsDefaultBatch(t *testing.T) {
	eng := llamaWith(t, "llama-embeddings-512", engines.LlamaOptions{Embeddings: true, DefaultBatch: true})
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 128, embedStages("llama", 8)))
	for _, o := range outs {
		inputs := 1
		if o.stage.Name == "batch" {
			inputs = 4
		}
		checkEmbeddings(t, o, inputs, 128)
		if strings.Contains(o.log, "could not calibrate") || strings.Contains(strings.Join(o.stage.Warnings, "\n"), "could not calibrate") {
			t.Errorf("%s: calibration fell back to the estimate: %v", o.stage.Name, o.stage.Warnings)
		}
		t.Logf("%s: input tokens within %.2f%% of %d", o.stage.Name, 100*inputError(o.recs, inputs*128), inputs*128)
	}
}

// TestLlamaServerRerank: llama-server started with --reranking scores 8
// documents a request against the prompt as the query.
func TestLlamaServerRerank(t *testing.T) {
	eng := llamaWith(t, "llama-rerank", engines.LlamaOptions{Reranking: true})
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 32, `
  - {name: rerank, endpoint: llama, prompts: synth, api: rerank, document_tokens: 64, concurrency: [2], requests: 6}
`))
	o := outs[0]
	noFailures(t, o)
	for _, r := range o.recs {
		if !r.UsageReported || r.Inputs != 8 || r.InputTokens < 8*(32+64) || r.TTFTMs != nil {
			t.Errorf("seq %d: usage %v inputs %d input tokens %d (8 pairs of 32 + 64) ttft %v", r.Seq, r.UsageReported, r.Inputs, r.InputTokens, r.TTFTMs)
		}
	}
}

// TestLlamaServerUnservedAPI: a chat llama-server (no --embeddings) asked
// for embeddings answers 501 and says how to start it; the stage stops with
// one error naming the API, the path and the server's words, before any
// measured request.
func TestLlamaServerUnservedAPI(t *testing.T) {
	eng := llama(t, false)
	err := runStageErr(t, eng.BaseURL, engines.LlamaModel, planFor("llama", 32, `
  - {name: embed, endpoint: llama, prompts: synth, api: embeddings, concurrency: [1], requests: 2}
`))
	if want := "api embeddings: POST " + eng.BaseURL + "/embeddings answered http 501 ("; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--embeddings") {
		t.Errorf("err %v, want %q and the server's --embeddings advice", err, want)
	}
}

// TestInferenceSimEmbeddings: llm-d-inference-sim answers embeddings of one
// input and of batches, with usage.
func TestInferenceSimEmbeddings(t *testing.T) {
	eng := inferenceSim(t, "plain", simFlags...)
	for _, o := range run(t, eng, engines.SimModel, planFor("sim", 128, embedStages("sim", 8))) {
		inputs := 1
		if o.stage.Name == "batch" {
			inputs = 4
		}
		checkEmbeddings(t, o, inputs, 128)
	}
}

// TestInferenceSimImages: llm-d-inference-sim takes image_url content parts
// on chat and input_image parts on Responses (synthetic PNG and JPEG data
// URLs) and counts them in its usage: the same prompts with images report
// more prompt tokens than without.
func TestInferenceSimImages(t *testing.T) {
	eng := inferenceSim(t, "plain", simFlags...)
	plan := `
version: 1
name: images
endpoints:
  sim: {base_url: ENDPOINT, model: MODEL}
prompts:
  text: {synthetic: {input_tokens: 64}}
  png: {synthetic: {input_tokens: 64}, images: {count: 2, width: 256, height: 256}}
  jpeg: {synthetic: {input_tokens: 64}, images: {width: 512, height: 384, format: jpeg}}
stages:
  - {name: text, endpoint: sim, prompts: text, output_tokens: 8, concurrency: [2], requests: 6}
  - {name: png, endpoint: sim, prompts: png, output_tokens: 8, concurrency: [2], requests: 6}
  - {name: jpeg, endpoint: sim, prompts: jpeg, output_tokens: 8, concurrency: [2], requests: 6}
  - {name: responses, endpoint: sim, prompts: png, api: responses, output_tokens: 8, concurrency: [2], requests: 6}
`
	outs := run(t, eng, engines.SimModel, plan)
	base := 0
	for _, o := range outs {
		noFailures(t, o)
		for _, r := range o.recs {
			if o.stage.Name == "text" {
				base = max(base, r.InputTokens)
				if r.ImageBytes != 0 {
					t.Errorf("text seq %d: image bytes %d", r.Seq, r.ImageBytes)
				}
				continue
			}
			if r.ImageBytes <= 0 || r.InputTokens <= base || !r.UsageReported {
				t.Errorf("%s seq %d: image bytes %d, input tokens %d (text alone: %d)", o.stage.Name, r.Seq, r.ImageBytes, r.InputTokens, base)
			}
		}
	}
}

// TestLlamaServerImagesRefused: llama-server without a multimodal projector
// refuses an image_url part with a 500 that says so, and Runner classifies
// it as that, every request alike.
func TestLlamaServerImagesRefused(t *testing.T) {
	eng := llama(t, false)
	o := run(t, eng, engines.LlamaModel, `
version: 1
name: images
endpoints:
  llama: {base_url: ENDPOINT, model: MODEL}
prompts:
  img: {synthetic: {input_tokens: 32}, images: {width: 32, height: 32}}
stages:
  - {name: img, endpoint: llama, prompts: img, output_tokens: 4, concurrency: [1], requests: 2}
`)[0]
	p := o.stage.Points[0]
	if p.Completed != 0 || p.ErrorsByKind["http_500"] != p.Failed || !strings.Contains(p.ErrorSamples["http_500"], "image input is not supported") {
		t.Errorf("completed %d, errors %v %v", p.Completed, p.ErrorsByKind, p.ErrorSamples)
	}
}

// TestUnservedBatchAPIs: neither engine here serves vLLM's /score
// (llama-server started with --reranking answers it 404 as JSON,
// llm-d-inference-sim 404 as text), and llm-d-inference-sim has no
// /v1/rerank (404, "Not Found": checked with curl): a score or rerank stage
// on them stops with one error naming the API and the path tried (score's
// at the server's root), before any measured request.
func TestUnservedBatchAPIs(t *testing.T) {
	for _, c := range []struct {
		name, ep, model, api, path string
		// eng takes the subtest's t: an engine that cannot be had skips
		// the subtest, and a skip called on the parent's t from a subtest
		// panics ("subtest may have called FailNow on a parent test").
		eng func(testing.TB) *engines.Engine
	}{
		{"llama-server", "llama", engines.LlamaModel, "score", "/score", func(t testing.TB) *engines.Engine {
			return llamaWith(t, "llama-rerank", engines.LlamaOptions{Reranking: true})
		}},
		{"llm-d-inference-sim", "sim", engines.SimModel, "score", "/score", func(t testing.TB) *engines.Engine { return inferenceSim(t, "plain", simFlags...) }},
		{"llm-d-inference-sim", "sim", engines.SimModel, "rerank", "/v1/rerank", func(t testing.TB) *engines.Engine { return inferenceSim(t, "plain", simFlags...) }},
	} {
		t.Run(c.name+" "+c.api, func(t *testing.T) {
			eng := c.eng(t)
			err := runStageErr(t, eng.BaseURL, c.model, planFor(c.ep, 32, fmt.Sprintf(`
  - {name: s, endpoint: %s, prompts: synth, api: %s, document_tokens: 16, concurrency: [1], requests: 2}
`, c.ep, c.api)))
			want := "api " + c.api + ": POST " + strings.TrimSuffix(eng.BaseURL, "/v1") + c.path + " answered http 404"
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "does not serve the "+c.api+" API at this path") {
				t.Errorf("err %v, want %q", err, want)
			}
		})
	}
}
