package cli

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// TestE2EReplayARun: a run's requests.jsonl, copied beside a second plan,
// replays as a trace (format: runner): the second run sends the same prompts
// (by the recorded index, through trace.prompts), each due when the first
// run's was, with the same max_tokens; its report shows the trace's summary.
func TestE2EReplayARun(t *testing.T) {
	t.Parallel()
	const prompts = `prompts:
  q: {inline: ["alpha one", "beta two", "gamma three"]}
`
	const sim = `version: 1
endpoints:
  sim: {simulator: {ttft_ms: 5, itl_ms: 1, prefill_ms_per_token: 0.001}}
`
	dir := t.TempDir()
	first := filepath.Join(dir, "first.yaml")
	writeFile(t, first, sim+"name: capture\n"+prompts+`stages:
  - {name: load, endpoint: sim, prompts: q, rate: [100], requests: 12, output_tokens: {min: 2, max: 9}, seed: 5}
`)
	out1 := filepath.Join(dir, "out1")
	if code, _, stderr := runRunner(t, childEnv(), first, "--out", out1, "--quiet", "--report", "json"); code != 0 {
		t.Fatalf("capture: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out1, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "captured.jsonl"), string(b))
	second := filepath.Join(dir, "second.yaml")
	writeFile(t, second, sim+"name: replay\n"+prompts+`  r: {trace: {file: captured.jsonl, format: runner, prompts: q}}
stages:
  - {name: again, endpoint: sim, prompts: r}
`)
	out2 := filepath.Join(dir, "out2")
	if code, _, stderr := runRunner(t, childEnv(), second, "--out", out2, "--quiet", "--report", "json"); code != 0 {
		t.Fatalf("replay: exit %d\n%s", code, stderr)
	}
	a, r := measured(readRequests(t, out1)), measured(readRequests(t, out2))
	if len(a) != 12 || len(r) != 12 {
		t.Fatalf("%d captured and %d replayed requests", len(a), len(r))
	}
	due := func(x result.Request) time.Time {
		return x.Start.Add(-time.Duration(x.DispatchLagMs * float64(time.Millisecond)))
	}
	for i := range a {
		if a[i].Prompt == nil || r[i].Prompt == nil || *r[i].Prompt != *a[i].Prompt || *a[i].Prompt != i%3 {
			t.Errorf("request %d: prompt %v, captured %v", i, r[i].Prompt, a[i].Prompt)
		}
		if r[i].MaxTokens != a[i].MaxTokens {
			t.Errorf("request %d: max_tokens %d, captured %d", i, r[i].MaxTokens, a[i].MaxTokens)
		}
		want, got := due(a[i]).Sub(due(a[0])), due(r[i]).Sub(due(r[0]))
		if math.Abs(float64(got-want)) > float64(10*time.Microsecond) {
			t.Errorf("request %d due %v after the first, captured %v", i, got, want)
		}
	}
	st := loadReport(t, out2).Stages[0]
	if st.Load != "trace" || st.Trace == nil || st.Trace.Requests != 12 || st.Trace.Format != "runner" || st.Trace.ImpliedPrefixHitRate != nil {
		t.Fatalf("stage load %q, trace %+v", st.Load, st.Trace)
	}
}

// measured is the non-warm-up records in dispatch order.
func measured(rs []result.Request) []result.Request {
	out := slices.DeleteFunc(rs, func(r result.Request) bool { return r.Warmup })
	slices.SortFunc(out, func(x, y result.Request) int { return x.Seq - y.Seq })
	return out
}
