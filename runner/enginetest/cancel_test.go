package enginetest

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
)

// metric is the sum of every sample of name on a /metrics page (whatever
// its labels); false when the page has none.
func metric(t *testing.T, metricsURL, name string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != ' ' && line[len(name)] != '{') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// metricsURL is an engine's /metrics page.
func metricsURL(eng *engines.Engine) string {
	return strings.TrimSuffix(eng.BaseURL, "/v1") + "/metrics"
}

// giveUpStage is a stage of two requests of out pinned tokens each, given
// up on after 16 token chunks, with no warm-up (so the server's counters
// hold these two requests alone).
func giveUpStage(out int) string {
	return `
  - {name: giveup, endpoint: e, prompts: synth, output_tokens: ` + strconv.Itoa(out) + `, concurrency: [2], requests: 2, warmup: 0, cancel_after_tokens: 16}
`
}

// cancelledAfter16 fails t unless both requests were cancelled after 16
// token chunks, with their first token recorded.
func cancelledAfter16(t *testing.T, o outcome) {
	t.Helper()
	p := o.stage.Points[0]
	if p.Cancelled != 2 || p.Completed != 0 || p.Failed != 0 {
		t.Fatalf("cancelled %d completed %d failed %d (%v), want both cancelled", p.Cancelled, p.Completed, p.Failed, p.ErrorSamples)
	}
	for _, r := range o.recs {
		if !r.Cancelled || r.Chunks != 16 || r.TTFTMs == nil {
			t.Errorf("request %d: cancelled %v after %d chunks, ttft %v", r.Seq, r.Cancelled, r.Chunks, r.TTFTMs)
		}
	}
}

// TestLlamaServerCancel: llama-server stops generating for a request its
// client gave up on. Two requests of 3,000 pinned tokens are cancelled after
// 16 chunks; its own decode counter (llamacpp:n_decode_total: one per batch
// step) then holds still, far below the 3,000 steps the answers would
// have taken, and no request is processing.
func TestLlamaServerCancel(t *testing.T) {
	eng := llama(t, false)
	url := metricsURL(eng)
	before, ok := metric(t, url, "llamacpp:n_decode_total")
	if !ok {
		t.Fatal("no llamacpp:n_decode_total on /metrics")
	}
	o := run(t, eng, "tiny", planFor("e", 32, giveUpStage(3000)))[0]
	cancelledAfter16(t, o)
	at0, _ := metric(t, url, "llamacpp:n_decode_total")
	time.Sleep(time.Second)
	at1, _ := metric(t, url, "llamacpp:n_decode_total")
	busy, _ := metric(t, url, "llamacpp:requests_processing")
	t.Logf("decode steps: %v at the stage's end, %v a second later (from %v before); processing %v", at0, at1, before, busy)
	if at1 != at0 || busy != 0 {
		t.Errorf("llama-server kept generating after its clients gave up: %v → %v decode steps in a second, %v processing", at0, at1, busy)
	}
	if at1-before >= 200 {
		t.Errorf("%v decode steps for two requests cut after 16 tokens", at1-before)
	}
}

// TestInferenceSimCancel: llm-d-inference-sim v0.10.2 does not stop for a
// request its client gave up on: it drains the rest of the answer unread,
// keeps the request running until its last token would have gone out, and
// then counts every token and the request as a success. (So on it a
// cancelled request costs the server what a completed one does; the
// runner's record of it is still cancelled, with what arrived.)
func TestInferenceSimCancel(t *testing.T) {
	eng := inferenceSim(t, "cancel", "--time-to-first-token", "10ms", "--inter-token-latency", "10ms")
	url := metricsURL(eng)
	gen0, _ := metric(t, url, "vllm:generation_tokens_total")
	ok0, _ := metric(t, url, "vllm:request_success_total")
	o := run(t, eng, engines.SimModel, planFor("e", 32, giveUpStage(300)))[0]
	cancelledAfter16(t, o)
	running, _ := metric(t, url, "vllm:num_requests_running")
	if running != 2 {
		t.Errorf("%v requests running right after both were cancelled, 3 s before their answers would end: the simulator stopped them", running)
	}
	var gen, succ float64
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if succ, _ = metric(t, url, "vllm:request_success_total"); succ-ok0 >= 2 {
			break
		}
	}
	gen, _ = metric(t, url, "vllm:generation_tokens_total")
	t.Logf("running %v after the stage; then %v successes and %v tokens generated", running, succ-ok0, gen-gen0)
	if succ-ok0 != 2 || gen-gen0 != 600 {
		t.Errorf("%v successes and %v tokens counted for two 300-token requests cancelled after 16: not the full answers", succ-ok0, gen-gen0)
	}
}

// TestLlamaServerRequestIDs: each record joins llama-server's answer: the
// response id its chunks carry (chatcmpl-…, one per request) and the trace
// id of the traceparent sent with it. llama-server sends no x-request-id.
func TestLlamaServerRequestIDs(t *testing.T) {
	o := run(t, llama(t, false), "tiny", planFor("e", 32, `
  - {name: ids, endpoint: e, prompts: synth, output_tokens: 8, concurrency: [2], requests: 4}
`))[0]
	noFailures(t, o)
	seen := map[string]bool{}
	for _, r := range o.recs {
		t.Logf("request %d: trace %s response %s x-request-id %q", r.Seq, r.TraceID, r.ResponseID, r.XRequestID)
		if !strings.HasPrefix(r.ResponseID, "chatcmpl-") || seen[r.ResponseID] || len(r.TraceID) != 32 || seen[r.TraceID] || r.XRequestID != "" {
			t.Errorf("request %d: response id %q, trace id %q: want one of its own each", r.Seq, r.ResponseID, r.TraceID)
		}
		seen[r.ResponseID], seen[r.TraceID] = true, true
	}
}

// TestInferenceSimRequestIDs: llm-d-inference-sim started with
// --enable-request-id-headers answers each request with an x-request-id of
// its own, which the record keeps beside the response id (its chunks' id
// is that request id after "chatcmpl-").
func TestInferenceSimRequestIDs(t *testing.T) {
	eng := inferenceSim(t, "request-ids", append([]string{"--enable-request-id-headers"}, simFlags...)...)
	o := run(t, eng, engines.SimModel, planFor("e", 32, `
  - {name: ids, endpoint: e, prompts: synth, output_tokens: 8, concurrency: [2], requests: 4}
`))[0]
	noFailures(t, o)
	seen := map[string]bool{}
	for _, r := range o.recs {
		t.Logf("request %d: trace %s response %s x-request-id %q", r.Seq, r.TraceID, r.ResponseID, r.XRequestID)
		if r.XRequestID == "" || seen[r.XRequestID] || r.ResponseID != "chatcmpl-"+r.XRequestID {
			t.Errorf("request %d: x-request-id %q, response id %q: want one of its own each", r.Seq, r.XRequestID, r.ResponseID)
		}
		seen[r.XRequestID], seen[r.ResponseID] = true, true
	}
}
