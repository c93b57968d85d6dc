package pipeline

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/runnerbench/runner/result"
)

// TestDiagnosisBuiltinSim runs sweeps against built-in simulators each
// given one limit (4 batch slots, a KV cache of 40 blocks, 30% of requests
// answered 503), reading their /metrics every 100 ms: the report's
// diagnosis names that limit, and `runner report` recomputes the same
// diagnosis from the records. Prefill costs little against a decode step
// in each, so the simulator's serial prefill steps (a request arriving
// during another's prefill waits for it: a prefill limit of its own) stay
// inside the knee's slack.
func TestDiagnosisBuiltinSim(t *testing.T) {
	plan := `version: 1
name: diagnosis
telemetry: {interval: 100ms}
endpoints:
  slots:
    simulator: {ttft_ms: 5, prefill_ms_per_token: 0.001, itl_ms: 8, max_num_seqs: 4}
  kv:
    simulator: {ttft_ms: 2, prefill_ms_per_token: 0.001, itl_ms: 6, kv_cache_blocks: 40}
  failing:
    simulator: {ttft_ms: 2, prefill_ms_per_token: 0.001, itl_ms: 6, faults: {http_503: 0.3}}
prompts:
  short: {synthetic: {input_tokens: 32}}
  p64: {synthetic: {input_tokens: 64}}
stages:
  - {name: slots, endpoint: slots, prompts: short, output_tokens: 24, concurrency: [1, 2, 4, 8], requests: [12, 12, 16, 32]}
  - {name: kv, endpoint: kv, prompts: p64, output_tokens: 60, concurrency: [1, 2, 4, 8], requests: [6, 6, 8, 24]}
  - {name: failing, endpoint: failing, prompts: short, output_tokens: 8, concurrency: [1, 2, 4], requests: [60, 60, 60]}
`
	dir := t.TempDir()
	rep := runPlanInto(t, dir, []byte(plan), nil)
	// The configured limit must be found, from the level where it first
	// holds or below; no other server cause may be named at or above it.
	// The simulator shares the machine: where it fell behind its own
	// model, the host set the pace (client_bound), which the diagnosis may
	// say instead. Below the configured limit, prefill-bound may be named
	// and is true: the simulator prefills one request at a time (5 ms each
	// in slots), so c=4's first tokens wait for up to three others'
	// prefills, inside the knee's slack on a quiet machine and out of it
	// when a busy one makes its steps late (seen: slots, prefill_bound from
	// c=4 beside two busy loops and a package's tests, the batch found full
	// from c=8).
	for _, c := range []struct {
		stage, cause, by string
	}{
		{"slots", result.CauseBatchFull, "c=8"},
		{"kv", result.CauseKVCacheFull, "c=8"},
		{"failing", result.CauseFailing, "c=1"},
	} {
		d := rep.StageNamed(c.stage).Diagnosis
		if d == nil {
			t.Errorf("%s: no diagnosis", c.stage)
			continue
		}
		for _, s := range d.Text {
			t.Logf("%s: %s", c.stage, s)
		}
		found := false
		for _, f := range d.Findings {
			switch f.Cause {
			case c.cause:
				found = found || f.From <= c.by // the labels here sort as their loads
			case result.CauseClientBound:
			case result.CausePrefillBound:
				if c.stage == "failing" || f.From >= c.by {
					t.Errorf("%s: a %s finding from %s where the limit is %s from %s", c.stage, f.Cause, f.From, c.cause, c.by)
				}
			default:
				t.Errorf("%s: a %s finding from %s where the limit is %s", c.stage, f.Cause, f.From, c.cause)
			}
		}
		if !found {
			t.Errorf("%s: no %s finding from %s or below: %+v", c.stage, c.cause, c.by, d.Findings)
		}
		if t.Failed() {
			// What the diagnosis read, for the next one to look at.
			for _, p := range rep.StageNamed(c.stage).Points {
				t.Logf("%s %s: running max %s, waiting p95 %s, TTFT p95 %s, sim behind %v", c.stage, p.Label(),
					fmtPtr(p.ServerRunningMax), fmtPtr(p.ServerWaitingP95), fmtPtr(p.TTFTP95Ms), p.SimBehind)
			}
		}
	}
	again, err := Recompute(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rep.Stages {
		a, _ := json.Marshal(rep.Stages[i].Diagnosis)
		b, _ := json.Marshal(again.Stages[i].Diagnosis)
		if string(a) != string(b) {
			t.Errorf("stage %s: recomputed diagnosis differs:\nlive  %s\nagain %s", rep.Stages[i].Name, a, b)
		}
	}
}

// fmtPtr is a metric's value, or null.
func fmtPtr(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
