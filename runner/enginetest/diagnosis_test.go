package enginetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/runner/telemetry"
)

// The diagnosis against servers whose limit is known: llm-d-inference-sim
// configured so that one cause is the limit (and llama-server's four slots),
// each swept coarsely (1, 2, 4, 8) and densely (every concurrency to the
// same top) on the same server. The diagnosis must name the configured
// cause, and the dense sweep's knee must lie between the coarse knee and
// the coarse level past it. The latencies are tens of milliseconds, so a
// busy machine's hiccups stay inside the knee's factor of 2.

// sweep is one stage of a diagnosis plan: its name and concurrencies.
type sweep struct {
	name  string
	conc  []int
	input int
}

var (
	coarse = []int{1, 2, 4, 8}
	dense  = []int{1, 2, 3, 4, 5, 6, 7, 8}
)

// sweepPlan is a plan of closed-loop pinned chat sweeps against ENDPOINT:
// output tokens each, perStream requests per stream at every level, at
// least 12 a level and 24 at the lightest (whose p95 every other level is
// held to: its second slowest request, so one hiccup of a busy machine
// does not move the bar).
func sweepPlan(output, perStream int, sweeps ...sweep) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: diagnosis\nendpoints:\n  e: {base_url: ENDPOINT, model: MODEL}\nprompts:\n")
	for _, s := range sweeps {
		fmt.Fprintf(&b, "  %s: {synthetic: {input_tokens: %d}}\n", s.name, s.input)
	}
	b.WriteString("stages:\n")
	for _, s := range sweeps {
		var conc, reqs []string
		for i, c := range s.conc {
			least := 12
			if i == 0 {
				least = 24
			}
			conc = append(conc, fmt.Sprint(c))
			reqs = append(reqs, fmt.Sprint(max(perStream*c, (least+c-1)/c*c)))
		}
		fmt.Fprintf(&b, "  - {name: %s, endpoint: e, prompts: %s, output_tokens: %d, concurrency: [%s], requests: [%s]}\n",
			s.name, s.name, output, strings.Join(conc, ", "), strings.Join(reqs, ", "))
	}
	return b.String()
}

// runDiagnosed runs every stage of the plan against baseURL, reading its
// /metrics every 100 ms, and returns each stage with its diagnosis.
func runDiagnosed(t testing.TB, baseURL, model, planYAML string) []*result.Stage {
	t.Helper()
	tel := telemetry.New(nil, 100*time.Millisecond, time.Second)
	t.Cleanup(tel.Close)
	plan, e, ctx, _ := openEngine(t, baseURL, model, planYAML, runner.Options{Telemetry: tel, TelemetryEndpoint: true})
	var out []*result.Stage
	for _, st := range plan.Stages {
		agg := aggregate.NewStage(0)
		if err := e.RunStage(ctx, plan.LoadPlan(st), agg); err != nil {
			t.Fatalf("stage %s: %v", st.Name, err)
		}
		res := agg.Result()
		res.Diagnosis = diagnosis.Diagnose(res, agg.ExpectsPrefixHits())
		if res.Diagnosis == nil {
			t.Fatalf("stage %s: no diagnosis", st.Name)
		}
		for _, s := range res.Diagnosis.Text {
			t.Logf("%s: %s", st.Name, s)
		}
		for _, p := range res.Points {
			t.Logf("%s %s: TTFT p95 %s ITL p50 %s, running max %s, waiting p95 %s, kv max %s, error rate %s",
				st.Name, p.Label(), val(p.TTFTP95Ms), val(p.ITLP50Ms), val(p.ServerRunningMax), val(p.ServerWaitingP95), val(p.KVCacheUsageMax), val(p.ErrorRate))
		}
		out = append(out, res)
	}
	return out
}

// limitFound fails t unless d's cause is cause, found from a level no
// higher than by.
func limitFound(t *testing.T, st *result.Stage, cause string, by float64) {
	t.Helper()
	d := st.Diagnosis
	if d.Cause != cause || len(d.Findings) == 0 || loadOf(st, d.Findings[0].From) > by {
		t.Errorf("%s: cause %s from %v; want %s from c=%g or below", st.Name, d.Cause, d.Findings, cause, by)
	}
}

// loadOf is the load of the level labelled label.
func loadOf(st *result.Stage, label string) float64 {
	for _, p := range st.Points {
		if p.LoadLabel() == label {
			return float64(p.Concurrency)
		}
	}
	return -1
}

// kneesAgree fails t unless the dense sweep's knee lies in [the coarse
// knee, the coarse level past it), and reports both.
func kneesAgree(t *testing.T, c, d *result.Stage) {
	t.Helper()
	ck, dk := c.Diagnosis.Knee, d.Diagnosis.Knee
	if ck == nil || dk == nil || ck.Beyond || dk.Beyond {
		t.Errorf("knees: coarse %+v, dense %+v", ck, dk)
		return
	}
	next := loadOf(c, ck.Next)
	if dk.Load < ck.Load || dk.Load >= next {
		t.Errorf("dense knee c=%g outside the coarse [c=%g, c=%g)", dk.Load, ck.Load, next)
	}
	t.Logf("knee: coarse c=%g (next c=%g), dense c=%g (next %s)", ck.Load, next, dk.Load, dk.Next)
}

// server is an llm-d-inference-sim given one limit: its flags, a gateway's
// limit in front of it (0: none), the prompts' and outputs' tokens, the
// cause it must be found to have, and its sweeps. A limit that arrives at
// once (slots, a KV cache, a gateway) is swept 1, 2, 4, 8 and every
// concurrency to 8; one that grows with the running count (prefill,
// decode, stretched by --time-factor-under-load) 1, 2, 10 and every
// concurrency to 10, so that no coarse level sits near the factor, where a
// busy machine's stall of a few in-flight requests would move a p95 across
// it: its bracket is [c=2, c=10).
type server struct {
	name          string
	flags         []string
	gateway       int64
	input, output int
	cause         string
	coarse, dense []int
}

var servers = map[string]server{
	// 4 batch slots: from c=5 a request waits a whole request (about 280
	// ms: its first token at 50 ms, 23 more 10 ms apart) for a slot while
	// the running gauge stays at 4. The first token's 50 ms keeps the
	// levels below the knee far from twice the lightest load's (a busy
	// machine's stall must pass 50 ms to lift them), and the wait lifts
	// those above it far past.
	"slots": {"slots", []string{"--time-to-first-token", "50ms", "--inter-token-latency", "10ms", "--max-num-seqs", "4"}, 0, 64, 24,
		result.CauseBatchFull, coarse, dense},
	// A KV cache of 76 blocks of 16 tokens and prompts of 256 tokens (13
	// blocks as the simulator counts them): five requests fit, a sixth is
	// answered "the kv cache does not have sufficient capacity".
	"kv": {"kv", []string{"--enable-kvcache", "--kv-cache-size", "76", "--block-size", "16", "--time-to-first-token", "50ms",
		"--inter-token-latency", "10ms", "--max-num-seqs", "16"}, 0, 256, 24, result.CauseKVCacheFull, coarse, dense},
	// TTFT is prefill, 5 ms + 1 ms a prompt token (about 210 ms for 200),
	// stretched 1 + 4(r−1)/15 times at r running (1.27× at c=2, 2.07× at
	// c=5, 3.4× at c=10), no inter-token latency: TTFT grows while ITL
	// holds and nothing waits. The long prompt keeps c=2 some 150 ms below
	// twice the lightest load's, more than a busy machine's stall.
	"prefill": {"prefill", []string{"--time-to-first-token", "0", "--prefill-overhead", "5ms", "--prefill-time-per-token", "1ms",
		"--inter-token-latency", "0", "--time-factor-under-load", "5", "--max-num-seqs", "16"}, 0, 200, 8, result.CausePrefillBound, gradual, denseTo(10)},
	// ITL 10 ms stretched the same way (12.7 ms at c=2, 34 ms at c=10):
	// every token slows as the batch grows.
	"decode": {"decode", []string{"--time-to-first-token", "20ms", "--inter-token-latency", "10ms", "--time-factor-under-load", "5",
		"--max-num-seqs", "16"}, 0, 64, 10, result.CauseDecodeBound, gradual, denseTo(10)},
	// A gateway lets 4 requests through at once and answers 429 to the
	// rest, in front of 16 slots: from c=5 requests are turned away.
	"gateway": {"gateway", []string{"--time-to-first-token", "50ms", "--inter-token-latency", "10ms", "--max-num-seqs", "16"}, 4, 64, 24,
		result.CauseRateLimited, coarse, dense},
}

var gradual = []int{1, 2, 10}

func denseTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// sweepServer starts the server (its own llm-d-inference-sim, behind its
// gateway) and runs its coarse and dense sweeps, reqs requests a stream.
func sweepServer(t testing.TB, sv server, coarseLevels, denseLevels []int, perStream int) []*result.Stage {
	eng := inferenceSim(t, "diagnosis-"+sv.name, sv.flags...)
	base := eng.BaseURL
	if sv.gateway > 0 {
		base = gateway(t, eng.Origin, sv.gateway)
	}
	return runDiagnosed(t, base, engines.SimModel, sweepPlan(sv.output, perStream,
		sweep{"coarse", coarseLevels, sv.input}, sweep{"dense", denseLevels, sv.input}))
}

// testServer is the test of a server: both sweeps name its cause, the
// dense knee lies in the coarse bracket, and a limit that arrives at once
// has its knee at c=4 in both.
func testServer(t *testing.T, name string) {
	sv := servers[name]
	sts := sweepServer(t, sv, sv.coarse, sv.dense, 2)
	top := float64(sv.dense[len(sv.dense)-1])
	for _, st := range sts {
		limitFound(t, st, sv.cause, top)
		if k := st.Diagnosis.Knee; sv.coarse[len(sv.coarse)-1] == 8 && (k == nil || k.Load != 4) {
			t.Errorf("%s: knee %+v, want c=4", st.Name, k)
		}
	}
	kneesAgree(t, sts[0], sts[1])
}

func TestDiagnoseBatchSlots(t *testing.T)  { testServer(t, "slots") }
func TestDiagnoseKVCache(t *testing.T)     { testServer(t, "kv") }
func TestDiagnosePrefill(t *testing.T)     { testServer(t, "prefill") }
func TestDiagnoseDecode(t *testing.T)      { testServer(t, "decode") }
func TestDiagnoseRateLimited(t *testing.T) { testServer(t, "gateway") }

// gateway is a proxy in front of an engine that answers 429 to a chat
// request beyond limit in flight, as a rate-limiting gateway does.
func gateway(t testing.TB, target string, limit int64) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	var inFlight atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			if inFlight.Add(1) > limit {
				inFlight.Add(-1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"error":{"message":"rate limit: too many requests in flight","type":"rate_limit_error"}}`))
				return
			}
			defer inFlight.Add(-1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestDiagnoseQueueThenRefusal: 2 slots behind a gateway that lets 4
// requests through at once: at c=4 two requests wait (the batch is full),
// at c=8 the gateway answers 429 to what it does not let through. Both
// findings are said, each from its level. (llm-d-inference-sim's own
// --max-waiting-queue-length answers a full queue with an error inside a
// 200 stream, and on v0.10.2 left a request unanswered until the client's
// timeout, so the gateway stands in for it.)
func TestDiagnoseQueueThenRefusal(t *testing.T) {
	eng := inferenceSim(t, "diagnosis-queue", "--time-to-first-token", "50ms", "--inter-token-latency", "10ms", "--max-num-seqs", "2")
	base := gateway(t, eng.Origin, 4)
	st := runDiagnosed(t, base, engines.SimModel, sweepPlan(24, 2, sweep{"coarse", coarse, 64}))[0]
	d := st.Diagnosis
	causes := map[string]string{}
	for _, f := range d.Findings {
		causes[f.Cause] = f.From
	}
	if d.Knee.Level != "c=2" || d.Cause != result.CauseBatchFull || causes[result.CauseBatchFull] != "c=4" || causes[result.CauseRateLimited] != "c=8" {
		t.Errorf("knee %+v, cause %s, findings %v; want knee c=2, batch_full from c=4, rate_limited from c=8", d.Knee, d.Cause, causes)
	}
}

// TestDiagnoseFailing: 30% of requests answered 503 at random
// (--failure-injection-rate 30 --failure-types server_error), whatever
// the load: requests fail at every load.
func TestDiagnoseFailing(t *testing.T) {
	eng := inferenceSim(t, "diagnosis-failing", "--time-to-first-token", "20ms", "--inter-token-latency", "5ms",
		"--failure-injection-rate", "30", "--failure-types", "server_error")
	st := runDiagnosed(t, eng.BaseURL, engines.SimModel, sweepPlan(8, 30, sweep{"s", []int{1, 2, 4}, 64}))[0]
	d := st.Diagnosis
	if d.Cause != result.CauseFailing || d.Findings[0].From != "c=1" {
		t.Errorf("cause %s, findings %+v; want failing from c=1", d.Cause, d.Findings)
	}
	if !slices.ContainsFunc(d.Findings[0].Evidence, func(e result.Evidence) bool { return e.Key == "http_503" && e.Level == "c=1" }) {
		t.Errorf("evidence %+v names no http_503 at c=1", d.Findings[0].Evidence)
	}
}

// TestDiagnoseLlamaSlots: llama-server's 4 slots, swept to 16: at c=8 and
// c=16 four requests are processing and the rest deferred, which the
// diagnosis finds as a full batch (prefill-bound may be named below it).
// Two levels past the slots, because a
// full batch needs the running count flat across more load, and c=4's
// requests of a few milliseconds may all be sampled at fewer than four
// running on a busy machine (seen: running max 2 at c=4 under load 9). The tiny model on a shared CPU may also
// slow every token as the batch grows before that: decode-bound is then
// the first limit, which is true of it, or not determined where its ITL
// grew by less than the rules' half-millisecond floor.
func TestDiagnoseLlamaSlots(t *testing.T) {
	eng := llama(t, false)
	st := runDiagnosed(t, eng.BaseURL, engines.LlamaModel, sweepPlan(32, 2, sweep{"coarse", []int{1, 2, 4, 8, 16}, 64}))[0]
	d := st.Diagnosis
	full := slices.ContainsFunc(d.Findings, func(f result.Finding) bool { return f.Cause == result.CauseBatchFull })
	for _, f := range d.Findings {
		switch f.Cause {
		case result.CauseBatchFull, result.CauseDecodeBound, result.CauseClientBound, result.CauseNotDetermined:
		case result.CausePrefillBound:
			// Below the slots, llama-server prefills the prompts that
			// arrive together in one batch beside the others' decode, so
			// TTFT grows with the load while the batch is not full: true
			// of it (seen in CI: from c=2, TTFT p95 12.7 → 20.5 ms, ITL
			// p50 0.44 → 0.92 ms, under the rules' half-millisecond floor).
			if loadOf(st, f.From) >= 8 {
				t.Errorf("finding %s from %s, where the slots are full", f.Cause, f.From)
			}
		default:
			t.Errorf("finding %s from %s", f.Cause, f.From)
		}
	}
	if !full {
		t.Errorf("no full batch found: %+v", d.Findings)
	}
}

// BenchmarkDiagnosisStudy is the long study behind the engine tests above:
// each configured server swept coarsely (1, 2, 4, 8, 16; prefill and decode
// 1, 2, 10, 16) and densely (every concurrency to 16),
// RUNNER_STUDY_REPEATS times (default 3), with RUNNER_STUDY_PER_STREAM
// requests a stream (default 4). It prints, per run, both knees, both
// causes, and whether the dense knee lies between the coarse knee and the
// coarse level past it; then how often each held.
//
//	go test ./runner/enginetest -run '^$' -bench DiagnosisStudy -benchtime 1x
func BenchmarkDiagnosisStudy(b *testing.B) {
	repeats, perStream := envInt("RUNNER_STUDY_REPEATS", 3), envInt("RUNNER_STUDY_PER_STREAM", 4)
	for range b.N {
		fmt.Printf("%-8s %-3s %-14s %-14s %-26s %s\n", "server", "run", "coarse knee", "dense knee", "causes (coarse, dense)", "agree")
		for _, name := range []string{"slots", "kv", "prefill", "decode", "gateway"} {
			sv := servers[name]
			c := []int{1, 2, 4, 8, 16}
			if sv.coarse[len(sv.coarse)-1] != 8 {
				c = []int{1, 2, 10, 16}
			}
			agree, named := 0, 0
			for r := range repeats {
				sts := sweepServer(b, sv, c, denseTo(16), perStream)
				ck, dk := sts[0].Diagnosis.Knee, sts[1].Diagnosis.Knee
				ok := ck != nil && dk != nil && !ck.Beyond && !dk.Beyond && dk.Load >= ck.Load && dk.Load < loadOf(sts[0], ck.Next)
				if ok {
					agree++
				}
				if sts[0].Diagnosis.Cause == sv.cause && sts[1].Diagnosis.Cause == sv.cause {
					named++
				}
				fmt.Printf("%-8s %-3d %-14s %-14s %-26s %v\n", name, r+1, kneeText(ck), kneeText(dk),
					sts[0].Diagnosis.Cause+", "+sts[1].Diagnosis.Cause, ok)
			}
			fmt.Printf("%-8s knees agreed in %d of %d runs; both named %s in %d of %d\n", name, agree, repeats, sv.cause, named, repeats)
		}
	}
}

func kneeText(k *result.LevelMark) string {
	if k == nil {
		return "none"
	}
	if k.Beyond {
		return k.Level + "+"
	}
	return k.Level + " (" + k.Next + ")"
}

func envInt(name string, def int) int {
	var v int
	if _, err := fmt.Sscan(os.Getenv(name), &v); err != nil || v < 1 {
		return def
	}
	return v
}
