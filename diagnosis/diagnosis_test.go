package diagnosis

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// lv is a constructed level: its load and the figures the rules read.
type lv struct {
	c                  int
	ttft, itl, perUser float64
	tput               float64
	errRate            float64
	errs               map[string]int
	running, waiting   float64 // running max, waiting p95; -1: no gauges
	runMean            float64
	kv                 float64 // -1: none
	preempt            int64   // -1: none
	hit                float64 // -1: none
	client             []string
	cpu                float64
	n                  int // requests (0: 100)
}

// stage builds a pinned chat stage of closed-loop levels.
func stage(levels ...lv) *result.Stage {
	st := &result.Stage{Name: "s", Mode: "pinned", Load: result.LoadConcurrency}
	for _, l := range levels {
		st.Points = append(st.Points, point(l))
	}
	return st
}

func point(l lv) result.Point {
	n := 100
	if l.n > 0 {
		n = l.n
	}
	failed := int(math.Round(l.errRate * float64(n)))
	p := result.Point{Concurrency: l.c, NRequests: n, Completed: n - failed, Failed: failed,
		OutputTPSTotal: l.tput, OutputTPSPerStream: l.perUser, ErrorsByKind: l.errs,
		ErrorRate: result.Ptr(l.errRate), MaxInFlight: result.Ptr(l.c)}
	if p.Completed > 0 {
		p.TTFTP95Ms, p.ITLP50Ms = result.Ptr(l.ttft), result.Ptr(l.itl)
	}
	if l.running >= 0 {
		p.ServerRunningMax, p.ServerWaitingP95 = result.Ptr(l.running), result.Ptr(l.waiting)
		p.ServerRunningMean = result.Ptr(l.runMean)
	}
	if l.kv >= 0 {
		p.KVCacheUsageMax = result.Ptr(l.kv)
	}
	if l.preempt >= 0 {
		p.ServerPreemptions = result.Ptr(l.preempt)
	}
	if l.hit >= 0 {
		p.PrefixCacheHitRate = result.Ptr(l.hit)
	}
	if len(l.client) > 0 {
		p.ClientBottleneck, p.ClientBottleneckBy = true, l.client
		p.ClientCPUPercent = result.Ptr(l.cpu)
	}
	return p
}

// quiet is a level with no gauges, KV, preemptions or prefix counters.
func quiet(c int, ttft, itl, perUser, tput float64) lv {
	return lv{c: c, ttft: ttft, itl: itl, perUser: perUser, tput: tput, running: -1, kv: -1, preempt: -1, hit: -1}
}

// gauged is quiet with the engine's running (max and mean) and waiting gauges.
func gauged(l lv, running, waiting float64) lv {
	l.running, l.waiting, l.runMean = running, waiting, running*0.9
	return l
}

// batchFull is a server of 4 slots swept to c=16: from c=8 requests wait,
// TTFT p95 grows with the queue, ITL stays at 10 ms, throughput flat.
func batchFull() *result.Stage {
	return stage(
		gauged(quiet(1, 100, 10, 90, 90), 1, 0),
		gauged(quiet(2, 102, 10, 89, 178), 2, 0),
		gauged(quiet(4, 110, 10.2, 86, 344), 4, 0),
		gauged(quiet(8, 900, 10.2, 40, 350), 4, 4),
		gauged(quiet(16, 2400, 10.1, 21, 348), 4, 12),
	)
}

// TestBatchFullEvidence: the knee, saturation and finding carry the
// figures that placed them.
func TestBatchFullEvidence(t *testing.T) {
	d := Diagnose(batchFull(), false)
	if d.Cause != result.CauseBatchFull || d.Knee.Level != "c=4" || d.Knee.Next != "c=8" || !slices.Equal(d.Knee.By, []string{"ttft_p95_ms", "output_tps_per_stream"}) ||
		d.Saturation == nil || d.Saturation.Level != "c=4" || d.Knee.Beyond {
		t.Errorf("diagnosis %+v", d)
	}
	if f := d.Findings[0]; f.From != "c=8" || !hasEvidence(f, "server_running_max", "c=16", 4) || !hasEvidence(f, "server_waiting_p95", "c=8", 4) {
		t.Errorf("finding %+v", f)
	}
	if !slices.Contains(d.Knee.Evidence, result.Evidence{Metric: "ttft_p95_ms", Level: "c=8", Value: 900}) ||
		!slices.Contains(d.Saturation.Evidence, result.Evidence{Metric: "output_tps_total", Level: "c=8", Value: 350}) ||
		!slices.Contains(d.Saturation.Evidence, result.Evidence{Metric: "output_tps_total", Level: "c=16", Value: 348}) {
		t.Errorf("knee %+v saturation %+v", d.Knee, d.Saturation)
	}
}

// sameText fails t unless d says exactly want.
func sameText(t *testing.T, d *result.Diagnosis, want []string) {
	t.Helper()
	if d == nil {
		t.Fatal("no diagnosis")
	}
	if !slices.Equal(d.Text, want) {
		b, _ := json.MarshalIndent(d.Text, "", "  ")
		t.Errorf("text:\n%s\nwant:\n%s", b, strings.Join(want, "\n"))
	}
}

func hasEvidence(f result.Finding, metric, level string, v float64) bool {
	return slices.ContainsFunc(f.Evidence, func(e result.Evidence) bool {
		return e.Metric == metric && e.Level == level && e.Value == v
	})
}

// cases are constructed sweeps whose limit is known, by name.
var cases = map[string]func() *result.Stage{
	"batch": batchFull,
	// KV cache: from c=8 usage is near full and requests are preempted
	// and wait; the slots (16) are never reached.
	"kv": kvStage,
	// KV cache as llm-d-inference-sim has it: prompts only, no preemption,
	// a request that does not fit fails in its stream.
	"kv-fail": func() *result.Stage {
		f := func(l lv, kv, e float64) lv {
			l = kvl(l, kv, -1)
			l.errRate = e
			if e > 0 {
				l.errs = map[string]int{"server_error": int(e * 100)}
			}
			return l
		}
		return stage(f(gauged(quiet(1, 50, 5, 150, 150), 1, 0), 0.22, 0),
			f(gauged(quiet(2, 50, 5, 150, 300), 2, 0), 0.45, 0),
			f(gauged(quiet(4, 52, 5, 148, 590), 4, 0), 0.89, 0),
			f(gauged(quiet(8, 52, 5, 148, 600), 4, 0), 0.89, 0.42))
	},
	// Prefill: TTFT p95 triples by c=8 while ITL holds and the batch grows
	// with the load, nothing waiting.
	"prefill": func() *result.Stage {
		return stage(gauged(quiet(1, 105, 0.02, 9, 9), 1, 0),
			gauged(quiet(2, 140, 0.03, 7, 14), 2, 0),
			gauged(quiet(4, 185, 0.02, 5.3, 21), 4, 0),
			gauged(quiet(8, 350, 0.05, 2.8, 23), 8, 0),
			gauged(quiet(16, 900, 0.04, 1.1, 18), 15, 0))
	},
	// Decode: ITL grows with the batch, from 10 ms to 40 ms.
	"decode": func() *result.Stage {
		return stage(gauged(quiet(1, 30, 10, 95, 95), 1, 0),
			gauged(quiet(2, 32, 11, 88, 176), 2, 0),
			gauged(quiet(4, 38, 13, 74, 296), 4, 0),
			gauged(quiet(8, 65, 22, 44, 352), 8, 0),
			gauged(quiet(16, 120, 40, 24, 384), 16, 0))
	},
	// Decode without telemetry: the ITL alone says it.
	"decode-blind": func() *result.Stage {
		return stage(quiet(1, 30, 10, 95, 95), quiet(2, 32, 11, 88, 176), quiet(4, 70, 24, 40, 320))
	},
	// TTFT grows while ITL holds, and no gauges to tell a queue from prefill.
	"blind": func() *result.Stage {
		return stage(quiet(1, 100, 10, 90, 90), quiet(2, 102, 10, 89, 178), quiet(4, 110, 10.2, 86, 344),
			quiet(8, 900, 10.2, 40, 350), quiet(16, 2400, 10.1, 21, 348))
	},
	// Gauges, but TTFT doubles while ITL grows by a third and nothing waits.
	"undetermined": func() *result.Stage {
		return stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(2, 101, 10, 90, 180), 2, 0),
			gauged(quiet(4, 230, 13.5, 60, 240), 3, 0))
	},
	// The built-in simulator fell behind its model at c=8: its TTFT stretched
	// up to 80%, its decode up to 3% (too little to count).
	"sim-late": func() *result.Stage {
		st := stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(4, 110, 11, 85, 340), 4, 0),
			gauged(quiet(8, 260, 12, 60, 400), 8, 0))
		p := &st.Points[2]
		p.SimBehind, p.SimTTFTStretchMax, p.SimDecodeStretchMax = true, result.Ptr(0.8), result.Ptr(0.03)
		return st
	},
	// The simulator fell behind at c=8 too, but its 80% stretch cannot make
	// TTFT 9 times the lightest's: the full batch is still the limit.
	"sim-late-queue": func() *result.Stage {
		st := batchFull()
		p := &st.Points[3]
		p.SimBehind, p.SimTTFTStretchMax, p.SimDecodeStretchMax, p.SimE2EStretchMax = true, result.Ptr(0.8), result.Ptr(0.03), result.Ptr(0.5)
		return st
	},
	// The runner's readers waited 1.3 ms (p90) for a core at c=8: that
	// cannot make TTFT grow by 800 ms, so the full batch is the limit and
	// the client a caveat.
	"client-sched": func() *result.Stage {
		st := batchFull()
		p := &st.Points[3]
		p.ClientBottleneck, p.ClientBottleneckBy, p.ClientSchedP90Ms = true, []string{"client_sched_p90_ms"}, result.Ptr(1.3)
		return st
	},
	// The simulator fell far behind at c=8, but preemptions are counted,
	// not timed: the KV cache is the limit, the lateness a caveat.
	"kv-sim-late": func() *result.Stage {
		st := kvStage()
		p := &st.Points[3]
		p.SimBehind, p.SimTTFTStretchMax, p.SimDecodeStretchMax, p.SimE2EStretchMax = true, result.Ptr(10.0), result.Ptr(2.0), result.Ptr(3.0)
		return st
	},
	// TTFT p95 triples at c=4 while ITL holds and the batch grows, but the
	// server's own TTFT did not move: the delay is outside the server, so
	// it is not prefill.
	"ttft-outside": func() *result.Stage {
		st := stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(2, 102, 10, 90, 180), 2, 0),
			gauged(quiet(4, 300, 10.1, 80, 330), 4, 0))
		for i, v := range []float64{60, 61, 62} {
			st.Points[i].ServerTTFTMeanMs = result.Ptr(v)
		}
		return st
	},
	// The client set the pace at c=8.
	"client": func() *result.Stage {
		l := gauged(quiet(8, 400, 30, 20, 160), 8, 0)
		l.client, l.cpu = []string{"client_cpu_percent"}, 187
		return stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(4, 110, 11, 85, 340), 4, 0), l)
	},
	// Rate limited from c=8: 30% answered 429, the successes as fast as ever.
	"ratelimited": func() *result.Stage {
		l := gauged(quiet(8, 101, 10, 90, 500), 5, 0)
		l.errRate, l.errs = 0.3, map[string]int{"http_429": 28, "http_503": 2}
		return stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(4, 100, 10, 90, 360), 4, 0), l)
	},
	// Failing from c=8: 503s.
	"failing": func() *result.Stage {
		l := gauged(quiet(8, 101, 10, 90, 500), 5, 0)
		l.errRate, l.errs = 0.2, map[string]int{"http_503": 20}
		return stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(4, 100, 10, 90, 360), 4, 0), l)
	},
	// Failing at every load: 30% 503 from c=1, latency within the factor.
	"throughout": func() *result.Stage {
		var ls []lv
		for _, c := range []int{1, 2, 4, 8} {
			l := gauged(quiet(c, 100, 10, 90, 63*float64(c)), float64(c), 0)
			l.errRate, l.errs = 0.3, map[string]int{"http_503": 30}
			ls = append(ls, l)
		}
		return stage(ls...)
	},
	// Within the factor to the end, throughput still growing.
	"none": func() *result.Stage {
		return stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(2, 110, 10, 89, 178), 2, 0),
			gauged(quiet(4, 120, 10.4, 86, 344), 4, 0))
	},
	// A full batch at c=8, then rate limiting (the queue full) at c=16.
	"batch-then-429": func() *result.Stage {
		st := batchFull()
		l := gauged(quiet(16, 1000, 10.1, 38, 352), 4, 4)
		l.errRate, l.errs = 0.5, map[string]int{"http_429": 50}
		st.Points[4] = point(l)
		return st
	},
	// Two slots' worth of decode: ITL doubles at c=2 already.
	"lightest": func() *result.Stage {
		return stage(gauged(quiet(1, 30, 10, 95, 95), 1, 0), gauged(quiet(2, 40, 21, 45, 90), 2, 0))
	},
	// The dense sweep's edge: c=4 fills the 4 slots, c=5 waits.
	"dense-batch": func() *result.Stage {
		return stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(2, 100, 10, 90, 180), 2, 0),
			gauged(quiet(3, 101, 10, 90, 270), 3, 0), gauged(quiet(4, 102, 10, 89, 356), 4, 0),
			gauged(quiet(5, 260, 10, 70, 358), 4, 1))
	},
	// 30% of requests fail at random, 20 a level: 5, 7 and 6 failures are
	// chance, not a rise.
	"noisy-failures": func() *result.Stage {
		var ls []lv
		for i, e := range []float64{0.25, 0.35, 0.3} {
			l := gauged(quiet(1<<i, 100, 10, 90, 63*float64(int(1)<<i)), float64(int(1)<<i), 0)
			l.errRate, l.n, l.errs = e, 20, map[string]int{"http_503": int(math.Round(e * 20))}
			ls = append(ls, l)
		}
		return stage(ls...)
	},
	// Every request at the lightest load failed.
	"dead": func() *result.Stage {
		l := quiet(1, 0, 0, 0, 0)
		l.errRate, l.errs = 1, map[string]int{"connect": 100}
		m := l
		m.c = 2
		return stage(l, m)
	},
	// The prefix cache served most prompts.
	"prefix": func() *result.Stage {
		a, b := gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(2, 105, 10, 90, 180), 2, 0)
		a.hit, b.hit = 0.85, 0.9
		return stage(a, b)
	},
}

// kvStage is a sweep whose KV cache fills from c=8: usage near full,
// requests preempted and waiting; the slots (16) are never reached.
func kvStage() *result.Stage {
	return stage(kvl(gauged(quiet(1, 100, 10, 90, 90), 1, 0), 0.12, 0),
		kvl(gauged(quiet(2, 101, 10, 90, 180), 2, 0), 0.24, 0),
		kvl(gauged(quiet(4, 105, 10.3, 86, 344), 4, 0), 0.5, 0),
		kvl(gauged(quiet(8, 600, 12, 45, 360), 7, 2), 0.97, 14),
		kvl(gauged(quiet(16, 2000, 12.5, 20, 362), 7, 9), 0.99, 61))
}

func kvl(l lv, kv float64, preempt int64) lv {
	l.kv, l.preempt = kv, preempt
	return l
}

// TestCauses (long by its table of cases): each constructed sweep gets its known cause, knee and
// saturation, its findings from the levels they hold at, and exactly these
// sentences.
func TestCauses(t *testing.T) {
	for _, c := range []struct {
		name, cause, knee, saturation string   // knee "c=8+": beyond the sweep
		findings                      []string // cause@from
		text                          []string
	}{
		{"ttft-outside", "not_determined", "c=2", "", []string{"not_determined@c=4"}, []string{
			"Knee at c=2: up to it per-user speed and latency stay within 2× of c=1's; at c=4 they do not: TTFT p95 300 ms, 3× the 100 ms at c=1.",
			"Output throughput did not stop growing within the sweep: its highest, 330 tok/s, is at c=4, the highest level, and every lower level had less than 90% of it.",
			"What limits the server from c=4 is not determined: no rule's evidence cleared its bar there (TTFT p95 300 ms, 3× the 100 ms at c=1; ITL p50 10.1 ms, 1× the 10.0 ms at c=1; running max 4; waiting p95 0).",
		}},
		{"kv-sim-late", "kv_cache_full", "c=4", "c=4", []string{"kv_cache_full@c=8", "client_bound@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 600 ms, 6× the 100 ms at c=1.",
			"Output throughput stops growing at c=4 (344 tok/s): up to c=16 (4× the load) its peak is 362 tok/s at c=16, 5.2% more.",
			"From c=8 the KV cache is full: usage max 97% leaves less than one request's room (12% at c=1), 14 requests preempted, waiting p95 2.",
			"At c=8 the built-in simulator fell behind its own timing model (its lateness stretched time to first token up to 1000%, its lateness stretched decode up to 200%): the figures there may be partly the measuring host's, not the server's.",
		}},
		{"client-sched", "batch_full", "c=4", "c=4", []string{"batch_full@c=8", "client_bound@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 900 ms, 9× the 100 ms at c=1; per-user speed 40 tok/s, 0.44× the 90 tok/s at c=1.",
			"Output throughput stops growing at c=4 (344 tok/s): up to c=16 (4× the load) its peak is 350 tok/s at c=8, 1.7% more.",
			"From c=8 the batch is full: the server runs at most 4 requests and the rest wait (waiting p95 4 at c=8, 12 at c=16); TTFT p95 grows with the queue (900 ms, 9× the 100 ms at c=1) while ITL p50 holds at 10.2 ms (10.0 ms at c=1): its slots (max_num_seqs or the engine's like) are the limit.",
			"At c=8 the runner flagged itself (client scheduling latency p90 1.30 ms): the figures there may be partly the measuring host's, not the server's.",
		}},
		{"sim-late-queue", "batch_full", "c=4", "c=4", []string{"batch_full@c=8", "client_bound@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 900 ms, 9× the 100 ms at c=1; per-user speed 40 tok/s, 0.44× the 90 tok/s at c=1.",
			"Output throughput stops growing at c=4 (344 tok/s): up to c=16 (4× the load) its peak is 350 tok/s at c=8, 1.7% more.",
			"From c=8 the batch is full: the server runs at most 4 requests and the rest wait (waiting p95 4 at c=8, 12 at c=16); TTFT p95 grows with the queue (900 ms, 9× the 100 ms at c=1) while ITL p50 holds at 10.2 ms (10.0 ms at c=1): its slots (max_num_seqs or the engine's like) are the limit.",
			"At c=8 the built-in simulator fell behind its own timing model (its lateness stretched time to first token up to 80%): the figures there may be partly the measuring host's, not the server's.",
		}},
		{"lightest", "decode_bound", "c=1", "c=1", []string{"decode_bound@c=2"}, []string{
			"Knee at c=1, the lightest load: already at c=2 latency or per-user speed leave 2× of its: ITL p50 21.0 ms, 2.1× the 10.0 ms at c=1; per-user speed 45 tok/s, 0.47× the 95 tok/s at c=1.",
			"Output throughput stops growing at c=1 (95 tok/s): up to c=2 (2× the load) no level went above it.",
			"From c=2 every token slows as the batch grows (ITL p50 10.0 ms at c=1, 21.0 ms at c=2; running mean 1.8 against 0.9): the server is decode-bound.",
		}},
		{"sim-late", "client_bound", "c=4", "", []string{"client_bound@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 260 ms, 2.6× the 100 ms at c=1.",
			"Output throughput did not stop growing within the sweep: its highest, 400 tok/s, is at c=8, the highest level, and every lower level had less than 90% of it.",
			"At c=8 the built-in simulator fell behind its own timing model (its lateness stretched time to first token up to 80%): the knee there is the measuring host's, not the server's.",
		}},
		{"dense-batch", "batch_full", "c=4", "", []string{"batch_full@c=5"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=5 they do not: TTFT p95 260 ms, 2.6× the 100 ms at c=1.",
			"Output throughput may stop growing at c=4 (356 tok/s, at least 90% of its peak, 358 tok/s at c=5), but no level went on to 1.5× that load to show it.",
			"From c=5 the batch is full: the server runs at most 4 requests and the rest wait (waiting p95 1 at c=5); TTFT p95 grows with the queue (260 ms, 2.6× the 100 ms at c=1) while ITL p50 holds at 10.0 ms (10.0 ms at c=1): its slots (max_num_seqs or the engine's like) are the limit.",
		}},
		{"noisy-failures", "failing", "c=4+", "", []string{"failing@c=1"}, []string{
			"No knee within the sweep: up to c=4, its highest level, per-user speed and latency stay within 2× of c=1's (TTFT p95 100 ms, 1× the 100 ms at c=1; ITL p50 10.0 ms, 1× the 10.0 ms at c=1; per-user speed 90 tok/s, 1× the 90 tok/s at c=1).",
			"Output throughput did not stop growing within the sweep: its highest, 252 tok/s, is at c=4, the highest level, and every lower level had less than 90% of it.",
			"Requests fail at every load: error rate 25% at c=1, the lightest, 30% at c=4 (failures at c=1 by kind: http_503 5).",
		}},
		{"batch", "batch_full", "c=4", "c=4", []string{"batch_full@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 900 ms, 9× the 100 ms at c=1; per-user speed 40 tok/s, 0.44× the 90 tok/s at c=1.",
			"Output throughput stops growing at c=4 (344 tok/s): up to c=16 (4× the load) its peak is 350 tok/s at c=8, 1.7% more.",
			"From c=8 the batch is full: the server runs at most 4 requests and the rest wait (waiting p95 4 at c=8, 12 at c=16); TTFT p95 grows with the queue (900 ms, 9× the 100 ms at c=1) while ITL p50 holds at 10.2 ms (10.0 ms at c=1): its slots (max_num_seqs or the engine's like) are the limit.",
		}},
		{"kv", "kv_cache_full", "c=4", "c=4", []string{"kv_cache_full@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 600 ms, 6× the 100 ms at c=1.",
			"Output throughput stops growing at c=4 (344 tok/s): up to c=16 (4× the load) its peak is 362 tok/s at c=16, 5.2% more.",
			"From c=8 the KV cache is full: usage max 97% leaves less than one request's room (12% at c=1), 14 requests preempted, waiting p95 2.",
		}},
		{"kv-fail", "kv_cache_full", "c=4", "c=4", []string{"kv_cache_full@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: error rate 42% against 0% at c=1.",
			"Output throughput stops growing at c=4 (590 tok/s): up to c=8 (2× the load) its peak is 600 tok/s at c=8, 1.7% more.",
			"From c=8 the KV cache is full: usage max 89% leaves less than one request's room (22% at c=1), error rate 42% (failures at c=8 by kind: server_error 42).",
		}},
		{"prefill", "prefill_bound", "c=4", "c=4", []string{"prefill_bound@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 350 ms, 3.3× the 105 ms at c=1; per-user speed 2.8 tok/s, 0.31× the 9 tok/s at c=1.",
			"Output throughput stops growing at c=4 (21 tok/s): up to c=16 (4× the load) its peak is 23 tok/s at c=8, 9.5% more.",
			"From c=8 TTFT p95 grows with the load (350 ms, 3.3× the 105 ms at c=1) while ITL p50 stays within 0.5 ms of the lightest load's (0.05 ms, 0.02 ms at c=1), and the batch is at no ceiling (running max 8, waiting p95 0): the server is prefill-bound.",
		}},
		{"decode", "decode_bound", "c=4", "c=8", []string{"decode_bound@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: ITL p50 22.0 ms, 2.2× the 10.0 ms at c=1; per-user speed 44 tok/s, 0.46× the 95 tok/s at c=1.",
			"Output throughput stops growing at c=8 (352 tok/s): up to c=16 (2× the load) its peak is 384 tok/s at c=16, 9.1% more.",
			"From c=8 every token slows as the batch grows (ITL p50 10.0 ms at c=1, 22.0 ms at c=8, 40.0 ms at c=16; running mean 7.2 against 0.9): the server is decode-bound.",
		}},
		{"decode-blind", "decode_bound", "c=2", "", []string{"decode_bound@c=4"}, []string{
			"Knee at c=2: up to it per-user speed and latency stay within 2× of c=1's; at c=4 they do not: ITL p50 24.0 ms, 2.4× the 10.0 ms at c=1; per-user speed 40 tok/s, 0.42× the 95 tok/s at c=1.",
			"Output throughput did not stop growing within the sweep: its highest, 320 tok/s, is at c=4, the highest level, and every lower level had less than 90% of it.",
			"From c=4 every token slows as the batch grows (ITL p50 10.0 ms at c=1, 24.0 ms at c=4): the server is decode-bound.",
		}},
		{"blind", "no_telemetry", "c=4", "c=4", []string{"no_telemetry@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 900 ms, 9× the 100 ms at c=1; per-user speed 40 tok/s, 0.44× the 90 tok/s at c=1.",
			"Output throughput stops growing at c=4 (344 tok/s): up to c=16 (4× the load) its peak is 350 tok/s at c=8, 1.7% more.",
			"What limits the server from c=8 is not determined: TTFT p95 900 ms, 9× the 100 ms at c=1; ITL p50 10.2 ms, 1× the 10.0 ms at c=1, and no telemetry read gave the engine's running and waiting gauges to tell a full batch, a full KV cache and a prefill-bound server apart. Runner reads them (vllm:num_requests_running and vllm:num_requests_waiting, SGLang's and llama.cpp's) from the endpoint's /metrics unless the plan's telemetry block sets endpoint: false; for an engine behind a gateway, add a telemetry target on the engine's own /metrics.",
		}},
		{"undetermined", "not_determined", "c=2", "", []string{"not_determined@c=4"}, []string{
			"Knee at c=2: up to it per-user speed and latency stay within 2× of c=1's; at c=4 they do not: TTFT p95 230 ms, 2.3× the 100 ms at c=1.",
			"Output throughput did not stop growing within the sweep: its highest, 240 tok/s, is at c=4, the highest level, and every lower level had less than 90% of it.",
			"What limits the server from c=4 is not determined: no rule's evidence cleared its bar there (TTFT p95 230 ms, 2.3× the 100 ms at c=1; ITL p50 13.5 ms, 1.4× the 10.0 ms at c=1; running max 3; waiting p95 0).",
		}},
		{"client", "client_bound", "c=4", "c=4", []string{"client_bound@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 400 ms, 4× the 100 ms at c=1; ITL p50 30.0 ms, 3× the 10.0 ms at c=1; per-user speed 20 tok/s, 0.22× the 90 tok/s at c=1.",
			"Output throughput stops growing at c=4 (340 tok/s): up to c=8 (2× the load) no level went above it.",
			"At c=8 the runner itself set the pace (client CPU 187%): the knee there is the measuring host's, not the server's.",
		}},
		{"ratelimited", "rate_limited", "c=4", "", []string{"rate_limited@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: error rate 30% against 0% at c=1.",
			"Output throughput did not stop growing within the sweep: its highest, 500 tok/s, is at c=8, the highest level, and every lower level had less than 90% of it.",
			"From c=8 the server turns requests away: error rate 30% against 0% at c=1 (failures at c=8 by kind: http_429 28, http_503 2).",
		}},
		{"failing", "failing", "c=4", "", []string{"failing@c=8"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: error rate 20% against 0% at c=1.",
			"Output throughput did not stop growing within the sweep: its highest, 500 tok/s, is at c=8, the highest level, and every lower level had less than 90% of it.",
			"From c=8 requests fail: error rate 20% against 0% at c=1 (failures at c=8 by kind: http_503 20).",
		}},
		{"throughout", "failing", "c=8+", "", []string{"failing@c=1"}, []string{
			"No knee within the sweep: up to c=8, its highest level, per-user speed and latency stay within 2× of c=1's (TTFT p95 100 ms, 1× the 100 ms at c=1; ITL p50 10.0 ms, 1× the 10.0 ms at c=1; per-user speed 90 tok/s, 1× the 90 tok/s at c=1).",
			"Output throughput did not stop growing within the sweep: its highest, 504 tok/s, is at c=8, the highest level, and every lower level had less than 90% of it.",
			"Requests fail at every load: error rate 30% at c=1, the lightest, 30% at c=8 (failures at c=1 by kind: http_503 30).",
		}},
		{"none", "none", "c=4+", "", []string(nil), []string{
			"No knee within the sweep: up to c=4, its highest level, per-user speed and latency stay within 2× of c=1's (TTFT p95 120 ms, 1.2× the 100 ms at c=1; ITL p50 10.4 ms, 1× the 10.0 ms at c=1; per-user speed 86 tok/s, 0.96× the 90 tok/s at c=1).",
			"Output throughput did not stop growing within the sweep: its highest, 344 tok/s, is at c=4, the highest level, and every lower level had less than 90% of it.",
		}},
		{"batch-then-429", "batch_full", "c=4", "c=4", []string{"batch_full@c=8", "rate_limited@c=16"}, []string{
			"Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's; at c=8 they do not: TTFT p95 900 ms, 9× the 100 ms at c=1; per-user speed 40 tok/s, 0.44× the 90 tok/s at c=1.",
			"Output throughput stops growing at c=4 (344 tok/s): up to c=16 (4× the load) its peak is 352 tok/s at c=16, 2.3% more.",
			"From c=8 the batch is full: the server runs at most 4 requests and the rest wait (waiting p95 4 at c=8, 4 at c=16); TTFT p95 grows with the queue (900 ms, 9× the 100 ms at c=1) while ITL p50 holds at 10.2 ms (10.0 ms at c=1): its slots (max_num_seqs or the engine's like) are the limit.",
			"From c=16 the server turns requests away: error rate 50% against 0% at c=1 (failures at c=16 by kind: http_429 50).",
		}},
		{"dead", "failing", "", "", []string{"failing@c=1"}, []string{
			"Every request at c=1, the lightest load, failed: there is no knee to place against it.",
			"Requests fail at every load: error rate 100% at c=1, the lightest, 100% at c=2 (failures at c=1 by kind: connect 100).",
		}},
		{"prefix", "none", "c=2+", "", []string{"prefix_cache@c=1"}, []string{
			"No knee within the sweep: up to c=2, its highest level, per-user speed and latency stay within 2× of c=1's (TTFT p95 105 ms, 1.1× the 100 ms at c=1; ITL p50 10.0 ms, 1× the 10.0 ms at c=1; per-user speed 90 tok/s, 1× the 90 tok/s at c=1).",
			"Output throughput did not stop growing within the sweep: its highest, 180 tok/s, is at c=2, the highest level, and every lower level had less than 90% of it.",
			"The prefix cache was not defeated: it served 90% of prompt tokens at c=2 (over 20% at 2 of 2 levels), so TTFT and prefill are flattered there; this is a fault of the measurement, not a limit of the server.",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Diagnose(cases[c.name](), false)
			sameText(t, d, c.text)
			knee, sat := "", ""
			if d.Knee != nil {
				knee = d.Knee.Level
				if d.Knee.Beyond {
					knee += "+"
				}
			}
			if d.Saturation != nil {
				sat = d.Saturation.Level
			}
			var fs []string
			for _, f := range d.Findings {
				fs = append(fs, f.Cause+"@"+f.From)
			}
			if d.Cause != c.cause || knee != c.knee || sat != c.saturation || !slices.Equal(fs, c.findings) {
				t.Errorf("cause %s knee %q saturation %q findings %v; want %s %q %q %v", d.Cause, knee, sat, fs, c.cause, c.knee, c.saturation, c.findings)
			}
		})
	}
}

// TestNoSweep: a stage of one load, or a trace replay, has no diagnosis.
func TestNoSweep(t *testing.T) {
	if d := Diagnose(stage(quiet(4, 100, 10, 90, 90)), false); d != nil {
		t.Errorf("one level: %+v", d)
	}
	st := batchFull()
	st.Load = result.LoadTrace
	if d := Diagnose(st, false); d != nil {
		t.Errorf("trace: %+v", d)
	}
	// Per-turn points are not loads of their own.
	st = stage(quiet(1, 100, 10, 90, 90), quiet(1, 300, 10, 90, 90))
	st.Points[1].Turn = 2
	if d := Diagnose(st, false); d != nil {
		t.Errorf("per-turn points: %+v", d)
	}
	// Nor are a level's models or its probe requests, and a series level's
	// load changes over its window: one label is no point of a sweep.
	for name, mark := range map[string]func(p *result.Point){
		"model":  func(p *result.Point) { p.Model = "lora" },
		"probes": func(p *result.Point) { p.ProbeRequests = true },
		"series": func(p *result.Point) {
			p.Series = &result.Series{Over: result.LoadConcurrency, Shape: "linear", Pieces: []result.SeriesPiece{{DurationS: 4, From: 1, To: 8}}}
		},
	} {
		st = stage(quiet(1, 100, 10, 90, 90), quiet(1, 300, 10, 90, 90))
		mark(&st.Points[1])
		if name == "series" {
			mark(&st.Points[0])
		}
		if d := Diagnose(st, false); d != nil {
			t.Errorf("%s points: %+v", name, d)
		}
	}
}

// TestUsersSweep: a users sweep is placed by its users, as a closed loop
// by its streams: the load ratio a sentence gives is a number.
func TestUsersSweep(t *testing.T) {
	st := batchFull()
	st.Load = result.LoadUsers
	for i := range st.Points {
		p := &st.Points[i]
		p.Users, p.Concurrency = p.Concurrency, 0
	}
	d := Diagnose(st, false)
	if d == nil || d.Saturation == nil || d.Knee == nil || d.Knee.Load == 0 {
		t.Fatalf("%+v", d)
	}
	for _, line := range d.Text {
		if strings.Contains(line, "NaN") || strings.Contains(line, "Inf") {
			t.Errorf("%q", line)
		}
	}
	if !strings.Contains(strings.Join(d.Text, " "), "users=") {
		t.Errorf("the text names no users level: %q", d.Text)
	}
}

// TestPrefixExpected: a stage that shares prefixes on purpose has no
// prefix-cache finding.
func TestPrefixExpected(t *testing.T) {
	d := Diagnose(cases["prefix"](), true)
	if d.Cause != result.CauseNone || len(d.Findings) != 0 || len(d.Text) != 2 {
		t.Errorf("%+v", d)
	}
}

// TestClientCaveat: a client flagged at a level at or below the knee
// qualifies it; the limit past the knee is still named.
func TestClientCaveat(t *testing.T) {
	st := batchFull()
	p := &st.Points[2]
	p.ClientBottleneck, p.ClientBottleneckBy, p.ClientSchedP90Ms = true, []string{"client_sched_p90_ms"}, result.Ptr(12.5)
	d := Diagnose(st, false)
	want := "At c=4 the runner flagged itself (client scheduling latency p90 12.5 ms): the figures there may be partly the measuring host's, not the server's."
	if d.Cause != result.CauseBatchFull || len(d.Findings) != 2 || d.Findings[1].Cause != result.CauseClientBound ||
		d.Findings[1].From != "c=4" || d.Text[len(d.Text)-1] != want {
		t.Errorf("%+v\n%q", d.Findings, d.Text)
	}
	// Two levels flagged: one sentence names both, with the first's figures.
	q := &st.Points[1]
	q.ClientBottleneck, q.ClientBottleneckBy, q.ClientSchedP90Ms = true, []string{"client_sched_p90_ms"}, result.Ptr(11.0)
	d = Diagnose(st, false)
	want = "At c=2, c=4 the runner flagged itself (at c=2: client scheduling latency p90 11.0 ms): the figures there may be partly the measuring host's, not the server's."
	if got := d.Text[len(d.Text)-1]; got != want || !hasEvidence(d.Findings[1], "client_sched_p90_ms", "c=4", 12.5) {
		t.Errorf("%q\n%+v", got, d.Findings)
	}
}

// TestKVBeforeBatch: a batch held flat below its slots by a full KV cache
// is the KV cache's doing, not the slots'.
func TestKVBeforeBatch(t *testing.T) {
	st := batchFull()
	for i, kv := range []float64{0.1, 0.2, 0.4, 0.98, 0.99} {
		st.Points[i].KVCacheUsageMax = result.Ptr(kv)
	}
	if d := Diagnose(st, false); d.Cause != result.CauseKVCacheFull || d.Findings[0].From != "c=8" {
		t.Errorf("%s %+v", d.Cause, d.Findings)
	}
	// Usage that leaves room, with no preemption, is not a full cache.
	for i, kv := range []float64{0.1, 0.2, 0.4, 0.5, 0.5} {
		st.Points[i].KVCacheUsageMax = result.Ptr(kv)
	}
	if d := Diagnose(st, false); d.Cause != result.CauseBatchFull {
		t.Errorf("%s %+v", d.Cause, d.Findings)
	}
}

// TestBatchNeedsFlat: requests that wait while the running count still
// grows with the load (one step's arrivals waiting for the next) are no
// full batch.
func TestBatchNeedsFlat(t *testing.T) {
	st := stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(7, 150, 10, 80, 500), 6, 1),
		gauged(quiet(8, 300, 10.2, 60, 520), 7, 1))
	if d := Diagnose(st, false); d.Cause != result.CausePrefillBound {
		t.Errorf("%s %q", d.Cause, d.Text)
	}
}

// TestSearchProbes: a search's probes at one load are one level, their
// figures the mean; labels drop the probe number.
func TestSearchProbes(t *testing.T) {
	st := batchFull()
	extra := point(gauged(quiet(8, 700, 10.2, 44, 352), 4, 6))
	extra.Probe = 6
	st.Points = append(st.Points, extra)
	d := Diagnose(st, false)
	if d.Knee.Next != "c=8" || !slices.Contains(d.Knee.Evidence, result.Evidence{Metric: "ttft_p95_ms", Level: "c=8", Value: 800}) ||
		!hasEvidence(d.Findings[0], "server_waiting_p95", "c=8", 5) {
		t.Errorf("%+v %+v", d.Knee, d.Findings)
	}
}

// TestRateSweep: an open-loop sweep is placed by its rates.
func TestRateSweep(t *testing.T) {
	st := decodeRates()
	d := Diagnose(st, false)
	if d.Lightest != "rate=2" || d.Knee.Level != "rate=8" || d.Knee.Load != 8 || d.Saturation == nil || d.Saturation.Level != "rate=16" ||
		d.Cause != result.CauseDecodeBound {
		t.Errorf("%+v %+v %q", d.Knee, d.Saturation, d.Text)
	}
}

// decodeRates is an open-loop sweep whose ITL grows with the batch; the
// throughput follows the rate until 16 requests/s.
func decodeRates() *result.Stage {
	st := &result.Stage{Name: "r", Mode: "pinned", Load: result.LoadRate}
	for _, l := range []struct {
		rate, itl, tput float64
		inflight        int
	}{{2, 10, 200, 2}, {4, 11, 400, 4}, {8, 14, 800, 9}, {16, 30, 1500, 30}, {32, 45, 1510, 200}} {
		p := point(gauged(quiet(0, 50, l.itl, 1000/l.itl, l.tput), float64(l.inflight), 0))
		p.Rate, p.MaxInFlight = result.Ptr(l.rate), result.Ptr(l.inflight)
		st.Points = append(st.Points, p)
	}
	return st
}

// TestNoOutput: an embeddings sweep is judged by E2E p95 and input
// throughput.
func TestNoOutput(t *testing.T) {
	st := &result.Stage{Name: "e", Mode: "", Load: result.LoadConcurrency}
	for _, l := range []struct {
		c         int
		e2e, tput float64
	}{{1, 20, 5000}, {2, 21, 9800}, {4, 60, 12000}, {8, 130, 12100}} {
		p := point(quiet(l.c, 0, 0, 0, 0))
		p.TTFTP95Ms, p.ITLP50Ms, p.E2EP95Ms, p.InputTPSTotal = nil, nil, result.Ptr(l.e2e), result.Ptr(l.tput)
		st.Points = append(st.Points, p)
	}
	d := Diagnose(st, false)
	want := []string{
		"Knee at c=2: up to it per-user speed and latency stay within 2× of c=1's; at c=4 they do not: E2E p95 60.0 ms, 3× the 20.0 ms at c=1.",
		"Input throughput stops growing at c=4 (12000 tok/s): up to c=8 (2× the load) its peak is 12100 tok/s at c=8, 0.8% more.",
		"What limits the server from c=4 is not determined: E2E p95 60.0 ms, 3× the 20.0 ms at c=1, and no telemetry read gave the engine's running and waiting gauges to tell a full batch, a full KV cache and a prefill-bound server apart. Runner reads them (vllm:num_requests_running and vllm:num_requests_waiting, SGLang's and llama.cpp's) from the endpoint's /metrics unless the plan's telemetry block sets endpoint: false; for an engine behind a gateway, add a telemetry target on the engine's own /metrics.",
	}
	sameText(t, d, want)
}

// TestSaturationNeedsSpan: throughput that reaches its plateau at the
// sweep's end is not shown to stop growing.
func TestSaturationNeedsSpan(t *testing.T) {
	st := stage(quiet(1, 100, 10, 90, 90), quiet(8, 100, 10, 90, 700), quiet(10, 100, 10, 90, 720))
	d := Diagnose(st, false)
	want := "Output throughput may stop growing at c=8 (700 tok/s, at least 90% of its peak, 720 tok/s at c=10), but no level went on to 1.5× that load to show it."
	if d.Saturation != nil || d.Text[1] != want {
		t.Errorf("%+v %q", d.Saturation, d.Text)
	}
}

// TestJSON: the diagnosis survives report.json.
func TestJSON(t *testing.T) {
	d := Diagnose(cases["batch-then-429"](), false)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back result.Diagnosis
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Cause != d.Cause || back.Knee.Next != "c=8" || len(back.Findings) != 2 || back.Findings[1].Evidence[len(back.Findings[1].Evidence)-1].Key != "http_429" {
		t.Errorf("%s", b)
	}
}

func TestChange(t *testing.T) {
	d := func(name string) *result.Diagnosis { return Diagnose(cases[name](), false) }
	for _, c := range []struct {
		base, cur, want string
	}{
		{"kv", "batch", "The KV cache is no longer the limit: a full batch is, from c=8 (it was from c=8)."},
		{"kv", "none", "The KV cache is no longer the limit: no level of the new run left the knee's factor."},
		{"kv", "blind", "The KV cache is no longer shown to be the limit: what limits the new run is not determined."},
		{"none", "decode", "Decode is now the limit, from c=8; no level of the baseline left the knee's factor."},
		{"undetermined", "ratelimited", "Rate limiting (HTTP 429) is now the limit, from c=8; what limited the baseline was not determined."},
		{"batch", "batch-then-429", ""},
		{"blind", "undetermined", ""},
	} {
		if got := Change(d(c.base), d(c.cur)); got != c.want {
			t.Errorf("%s → %s: %q, want %q", c.base, c.cur, got, c.want)
		}
	}
	if Change(nil, d("kv")) != "" || Change(d("kv"), nil) != "" {
		t.Error("a missing diagnosis makes a change")
	}
}

// TestStepSlack: TTFT that doubles at c=2 by one decode step of the batch
// (5 ms prefill alone, then up to 25 ms once it waits for and shares a step
// with the batch's 10 ms decode) is no knee; a TTFT that grows by more than
// three of the level's gaps is.
func TestStepSlack(t *testing.T) {
	st := stage(gauged(quiet(1, 5, 10, 95, 95), 1, 0), gauged(quiet(2, 24, 10, 94, 188), 2, 0),
		gauged(quiet(4, 34, 10, 90, 360), 4, 0))
	d := Diagnose(st, false)
	if !d.Knee.Beyond {
		t.Errorf("TTFT 5 → 24 → 34 ms with 10 ms gaps: knee %+v", d.Knee)
	}
	st.Points[2].TTFTP95Ms = result.Ptr(36.0)
	if d := Diagnose(st, false); d.Knee.Beyond || d.Knee.Next != "c=4" || !slices.Equal(d.Knee.By, []string{"ttft_p95_ms"}) {
		t.Errorf("TTFT 5 → 36 ms with 10 ms gaps: knee %+v", d.Knee)
	}
}

func TestHeadline(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"batch", "knee c=4 · saturation c=4 · limit: a full batch (batch_full)"},
		{"none", "knee ≥ c=4 · no saturation · limit: none within the sweep (none)"},
		{"blind", "knee c=4 · saturation c=4 · limit: not determined (no telemetry) (no_telemetry)"},
		{"dead", "no knee · no saturation · limit: failing requests (failing)"},
	} {
		if got := Headline(Diagnose(cases[c.name](), false)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOnce: one level's excursion past the factor (a hiccup at c=2, c=3
// back inside) does not place the knee; the sentence says so, and the
// knee is where the break stays.
func TestOnce(t *testing.T) {
	st := stage(gauged(quiet(1, 100, 10, 90, 90), 1, 0), gauged(quiet(2, 260, 10, 88, 170), 2, 0),
		gauged(quiet(3, 110, 10, 87, 260), 3, 0), gauged(quiet(4, 112, 10, 86, 344), 4, 0),
		gauged(quiet(5, 300, 10, 70, 350), 4, 1), gauged(quiet(6, 420, 10, 60, 351), 4, 2))
	d := Diagnose(st, false)
	want := "Knee at c=4: up to it per-user speed and latency stay within 2× of c=1's, but for c=2, which left it alone (TTFT p95 260 ms, 2.6× the 100 ms at c=1; the level above came back within it); at c=5 they do not: TTFT p95 300 ms, 3× the 100 ms at c=1."
	if d.Knee.Level != "c=4" || !slices.Equal(d.Knee.Once, []string{"c=2"}) || d.Text[0] != want || d.Cause != result.CauseBatchFull {
		t.Errorf("knee %+v cause %s\n%q\nwant\n%q", d.Knee, d.Cause, d.Text[0], want)
	}
	// The highest level alone out of the factor is a break: nothing above
	// it can say it came back.
	st.Points = st.Points[:5]
	if d := Diagnose(st, false); d.Knee.Level != "c=4" || d.Knee.Next != "c=5" {
		t.Errorf("knee %+v", d.Knee)
	}
	// Every excursion came back: no knee, and the sentence says which.
	st.Points = st.Points[:4]
	want = "No knee within the sweep: up to c=4, its highest level, per-user speed and latency stay within 2× of c=1's (TTFT p95 112 ms, 1.1× the 100 ms at c=1; ITL p50 10.0 ms, 1× the 10.0 ms at c=1; per-user speed 86 tok/s, 0.96× the 90 tok/s at c=1), but for c=2, which left it alone (TTFT p95 260 ms, 2.6× the 100 ms at c=1; the level above came back within it)."
	if d := Diagnose(st, false); !d.Knee.Beyond || d.Text[0] != want {
		t.Errorf("knee %+v\n%q", d.Knee, d.Text[0])
	}
}
