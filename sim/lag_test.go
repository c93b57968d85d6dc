package sim

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/sim/simconfig"
)

// lagCounters reads the simulator's own lateness counters from /metrics,
// and from its lag-ratio histogram the requests timed ("timed") and those
// stretched by more than 2.5% ("behind").
func lagCounters(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	fams := scrape(t, s)
	out := map[string]float64{}
	for _, name := range []string{simconfig.MetricSteps, simconfig.MetricLateSteps, simconfig.MetricStepLateness, simconfig.MetricRequestLag} {
		f, ok := fams[name+"_total"]
		if !ok {
			t.Fatalf("/metrics has no %s_total", name)
		}
		out[name] = f.GetMetric()[0].GetCounter().GetValue()
	}
	f, ok := fams[simconfig.MetricLagRatio]
	if !ok {
		t.Fatalf("/metrics has no %s", simconfig.MetricLagRatio)
	}
	h := f.GetMetric()[0].GetHistogram()
	out["timed"] = float64(h.GetSampleCount())
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == BehindShare {
			out["behind"] = out["timed"] - float64(b.GetCumulativeCount())
		}
	}
	return out
}

// TestLagKeptModel runs a model any machine keeps up with, one stream at a
// time, and checks the counters' bookkeeping, which holds however busy the
// machine is: one step per token at concurrency 1 (the prefill gives the
// first), every request timed, late and behind never more than there are.
func TestLagKeptModel(t *testing.T) {
	s := startSim(t, FastConfig())
	const requests, tokens = 4, 16
	for range requests {
		res := doStream(t, t.Context(), s, "/completions", map[string]any{
			"model": "sim", "prompt": "[" + nonce() + "] hello", "max_tokens": tokens, "ignore_eos": true, "stream": true})
		if res.status != 200 || res.err != nil {
			t.Fatalf("request: %d %v", res.status, res.err)
		}
	}
	// A request answered whole is timed too (its first token is its last).
	resp, err := post(t.Context(), s.URL()+"/completions", map[string]any{
		"model": "sim", "prompt": "[" + nonce() + "] hello", "max_tokens": tokens, "ignore_eos": true, "stream": false})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c := lagCounters(t, s)
	if c[simconfig.MetricSteps] != (requests+1)*tokens {
		t.Errorf("steps %v, want %d (one per token at concurrency 1)", c[simconfig.MetricSteps], (requests+1)*tokens)
	}
	if c["timed"] != requests+1 {
		t.Errorf("timed requests %v, want %d", c["timed"], requests+1)
	}
	if c[simconfig.MetricLateSteps] > c[simconfig.MetricSteps] || c["behind"] > requests+1 {
		t.Errorf("more late than there are: %v", c)
	}
	if c[simconfig.MetricLateSteps] == 0 && c[simconfig.MetricStepLateness] != 0 {
		t.Errorf("lateness %v s without a late step", c[simconfig.MetricStepLateness])
	}
}

// TestLagUnkeptModel runs a model no machine keeps up with: decode steps
// of a microsecond for 64 streams at once, when handing a step's tokens to
// 64 streams and writing them takes far longer. The simulator must say it
// fell behind: most requests behind, their last tokens milliseconds late.
// The prefill step is long (100 ms) so that requests arriving during one
// are admitted together and decode at once, however the client's sends
// spread on a busy machine: with a 1 µs prefill, requests sent late decoded
// nearly alone, which the simulator keeps up with, and 27 to 38 of 64 were
// behind (idle or busy); with 100 ms, 52 to 64.
func TestLagUnkeptModel(t *testing.T) {
	cfg := FastConfig()
	cfg.TTFTMs, cfg.PrefillMsPerToken = 100, 0.000001
	cfg.ITLMs, cfg.ITLMsPerSeq = 0.001, 0.000001
	s := startSim(t, cfg)
	const streams, tokens = 64, 128
	var wg sync.WaitGroup
	errs := make(chan string, streams)
	for range streams {
		wg.Go(func() {
			resp, err := post(t.Context(), s.URL()+"/completions", map[string]any{
				"model": "sim", "prompt": "[" + nonce() + "] hello", "max_tokens": tokens, "ignore_eos": true, "stream": true})
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil {
				errs <- err.Error()
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("request: %s", e)
	}
	c := lagCounters(t, s)
	t.Logf("counters: %v", c)
	if c["timed"] != streams {
		t.Fatalf("timed requests %v, want %d", c["timed"], streams)
	}
	if behind := c["behind"]; behind < streams/2 {
		t.Errorf("behind requests %v of %d, want most: the model cannot be kept (%v)", behind, streams, c)
	}
	if mean := time.Duration(c[simconfig.MetricRequestLag] / streams * 1e9); mean < time.Millisecond {
		t.Errorf("mean request lag %v, want at least 1 ms (%v)", mean, c)
	}
}

// TestReplan holds the engine's drift to what it lost: a plan kept on time
// loses nothing, a plan restarted from the clock loses at least how far
// behind it was, and waking from idle costs each sequence at least how long
// it waited, and the schedule nothing. Only lower bounds, which a busy machine cannot break.
func TestReplan(t *testing.T) {
	e := &engine{cfg: FastConfig(), epoch: time.Now().Add(-time.Second)}
	now := e.now()
	if got := e.replan(now+time.Second, false, nil); got != now+time.Second || e.drift.Load() != 0 {
		t.Errorf("on time: start %v drift %v, want the plan's start and no drift", got, e.drift.Load())
	}
	e.replan(now-50*time.Millisecond, false, nil)
	if d := time.Duration(e.drift.Load()); d < 50*time.Millisecond {
		t.Errorf("restarted 50 ms behind: drift %v", d)
	}
	e.drift.Store(0)
	early, late := &seq{arrival: e.now() - 30*time.Millisecond}, &seq{arrival: e.now() + time.Hour}
	e.replan(0, true, []*seq{early, late})
	if early.wakeLag < 30*time.Millisecond || late.wakeLag != 0 || e.drift.Load() != 0 {
		t.Errorf("woke from idle 30 ms after an arrival: that one's lag %v, a later one's %v, drift %v; want only the first to wait",
			early.wakeLag, late.wakeLag, e.drift.Load())
	}
	e.cfg.ZeroLatency = true
	e.drift.Store(0)
	e.replan(0, false, nil)
	if e.drift.Load() != 0 {
		t.Errorf("zero latency: drift %v, want none (the model takes no time)", e.drift.Load())
	}
}

// TestRequestLagBehind is the rule that a request counts as behind: its
// first token or its decode late by more than 2.5% of the model's and 1 ms.
func TestRequestLagBehind(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		l    requestLag
		want bool
	}{
		{requestLag{lagFirst: 0, lagLast: 0, ttft: 50 * ms, decode: 60 * ms}, false},
		{requestLag{lagFirst: 900 * time.Microsecond, lagLast: 900 * time.Microsecond, ttft: 10 * ms, decode: 10 * ms}, false}, // under the floor
		{requestLag{lagFirst: 2 * ms, lagLast: 2 * ms, ttft: 50 * ms, decode: 60 * ms}, true},                                  // 4% of TTFT
		{requestLag{lagFirst: 2 * ms, lagLast: 2 * ms, ttft: 500 * ms, decode: 60 * ms}, false},                                // 0.4%, decode on time
		{requestLag{lagFirst: 0, lagLast: 3 * ms, ttft: 500 * ms, decode: 60 * ms}, true},                                      // decode 5% late
		{requestLag{lagFirst: 0, lagLast: 3 * ms, ttft: 500 * ms, decode: 600 * ms}, false},                                    // 0.5%
	} {
		if e := c.l.e2eRatio(); e > max(c.l.ttftRatio(), c.l.decodeRatio()) {
			t.Errorf("%+v: the whole stretched by %v, more than its parts", c.l, e)
		}
		if got := c.l.behind(); got != c.want || got != (c.l.ratio() > BehindShare) {
			t.Errorf("%+v: behind %v, want %v", c.l, got, c.want)
		}
	}
}
