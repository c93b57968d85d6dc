package runner

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// TestAccuracy compares what the engine measured with what the simulator
// wrote, request by request, at concurrency 1, 64 and 512.
func TestAccuracy(t *testing.T) {
	for _, conc := range []int{1, 64, 512} {
		t.Run(fmt.Sprint("c=", conc), func(t *testing.T) {
			if testing.Short() && conc > 64 {
				t.Skip("short")
			}
			if conc > 1 {
				// Timing under load is only meaningful when this process and
				// the simulator get the cores they need; on a machine already
				// running more than two runnable threads per core the
				// scheduler, not the engine, sets the error.
				// RUNNER_ACCURACY_FORCE=1 asserts regardless.
				if load, ok := loadAvg(); ok && load > 2*float64(runtime.NumCPU()) && os.Getenv("RUNNER_ACCURACY_FORCE") == "" {
					t.Skipf("machine overloaded (load average %.1f on %d cores): timing accuracy not measurable", load, runtime.NumCPU())
				}
			}
			cfg := fastSim()
			cfg.MaxNumSeqs = 1024
			if conc > 64 {
				// 512 streams and the simulator share two cores: every
				// decode step is a burst of 512 writes and 512 reads, so
				// give the steps room (a real server is on another machine).
				cfg.TTFTMs, cfg.ITLMs = 50, 20
			}
			s := startRemoteSim(t, cfg)
			e, col := newEngine(t, s.url, nil)
			const out = 12
			st := stage(out, conc)
			if conc == 1 {
				st.Requests.Each = 8
			}
			res := runStage(t, e, synthPlan(64, ""), st)
			p := res.Points[0]
			reqs := col.measured()
			if p.Failed != 0 || p.Completed != len(reqs) || len(reqs) != max(conc, st.Requests.Each) {
				t.Fatalf("completed %d failed %d of %d records: %v", p.Completed, p.Failed, len(reqs), p.Error)
			}
			var gapSum float64
			var gapN int
			// Per-request misses of the 2 ms / 5% bound. The simulator and
			// the engine share two cores (with whatever else the machine
			// runs), and a decode step is a burst of conc writes and reads,
			// so a scheduling hiccup can delay single reads: at least 90% of
			// requests (all but one of a few) must be within the bound for
			// TTFT and E2E, and the median TTFT error must be within it too
			// (a systematic error fails both). Per-request max ITL, the
			// noisiest figure, is logged; the level's ITL mean is asserted.
			var misses, ttftMiss, e2eMiss int
			var ttftErr []float64
			truths := s.truths(t)
			for _, r := range reqs {
				tr, ok := truths[r.Nonce]
				if !ok {
					t.Fatalf("the simulator has no request with nonce %s", r.Nonce)
				}
				if r.OutputTokens != tr.OutputTokens || r.OutputTokens != out || r.Chunks != tr.Chunks {
					t.Fatalf("%s: tokens %d chunks %d, sim sent %d in %d chunks", r.Nonce, r.OutputTokens, r.Chunks, tr.OutputTokens, tr.Chunks)
				}
				if r.InputTokens != tr.PromptTokens {
					t.Fatalf("%s: input tokens %d, sim counted %d", r.Nonce, r.InputTokens, tr.PromptTokens)
				}
				if r.TTFTMs == nil || r.MaxITLMs == nil {
					t.Fatalf("%s: no TTFT or ITL", r.Nonce)
				}
				wantTTFT := ms(tr.TokenWritten[0].Sub(r.Start))
				var maxGap float64
				for i := 1; i < len(tr.TokenWritten); i++ {
					g := ms(tr.TokenWritten[i].Sub(tr.TokenWritten[i-1]))
					maxGap = max(maxGap, g)
					gapSum += g
					gapN++
				}
				wantE2E := ms(tr.End.Sub(r.Start))
				ttftErr = append(ttftErr, *r.TTFTMs-wantTTFT)
				if !within(*r.TTFTMs, wantTTFT) {
					ttftMiss++
				}
				if !within(r.E2EMs, wantE2E) {
					e2eMiss++
				}
				if !within(*r.TTFTMs, wantTTFT) || !within(*r.MaxITLMs, maxGap) || !within(r.E2EMs, wantE2E) {
					misses++
					t.Logf("%s: TTFT %.3f (sim %.3f), max ITL %.3f (sim %.3f), E2E %.3f (sim %.3f) ms",
						r.Nonce, *r.TTFTMs, wantTTFT, *r.MaxITLMs, maxGap, r.E2EMs, wantE2E)
				}
			}
			if raceOn {
				t.Logf("race detector on: timing bounds not asserted (%d misses)", misses)
				return
			}
			if allowed := max(1, len(reqs)/10); ttftMiss > allowed || e2eMiss > allowed {
				t.Errorf("TTFT of %d and E2E of %d of %d requests outside 2 ms / 5%% of the simulator's truth (allowed %d)", ttftMiss, e2eMiss, len(reqs), allowed)
			}
			sort.Float64s(ttftErr)
			if med, bound := ttftErr[len(ttftErr)/2], max(2, 0.05*deref0(p.TTFTP50Ms)); med < -0.5 || med > bound {
				t.Errorf("median TTFT error %.3f ms (bound %.3f)", med, bound)
			}
			// The level's ITL mean is the mean of the gaps the sim wrote.
			wantMean := gapSum / float64(gapN)
			if p.ITLMeanMs == nil || !within(*p.ITLMeanMs, wantMean) {
				t.Errorf("ITL mean %v ms, sim's mean gap %.3f ms", deref(p.ITLMeanMs), wantMean)
			}
			if p.ITLMeanMs != nil && math.Abs(*p.ITLMeanMs-wantMean) > 0.5 {
				t.Errorf("ITL mean %v ms is %.3f ms off the sim's %.3f", *p.ITLMeanMs, *p.ITLMeanMs-wantMean, wantMean)
			}
			t.Logf("c=%d: %d/%d any-metric misses (ttft %d, e2e %d), median TTFT error %.3f ms, ttft_p50 %v ms, itl_mean %v ms (sim %.3f), cpu %v%%, lag p99 %v ms",
				conc, misses, len(reqs), ttftMiss, e2eMiss, ttftErr[len(ttftErr)/2], deref(p.TTFTP50Ms), deref(p.ITLMeanMs), wantMean, deref(p.ClientCPUPercent), deref(p.DispatchLagP99Ms))
		})
	}
}

// loadAvg is the 1-minute load average (Linux).
func loadAvg() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestRequestBody checks what goes over the wire: payload fields, ignore_eos
// only when pinned, extra_body merged, auth header, and the leading nonce.
func TestRequestBody(t *testing.T) {
	s := startSim(t, fastSim())
	for _, mode := range []string{"pinned", "natural"} {
		t.Run(mode, func(t *testing.T) {
			sp := startSpy(t, s)
			e, col := newEngine(t, sp.URL+"/v1", &scenario.Endpoint{
				APIKey:  "sk-secret-123",
				Headers: map[string]scenario.Secret{"X-Team": "bench"},
			})
			st := stage(8, 2)
			st.Mode = scenario.Mode(mode)
			st.ExtraBody = map[string]any{"top_p": 0.5, "stream": false, "stream_options": map[string]any{"continuous_usage_stats": true}}
			res := runStage(t, e, synthPlan(32, ""), st)
			if res.Points[0].Failed != 0 {
				t.Fatalf("failures: %v", res.Points[0].Error)
			}
			reqs := sp.requests("/v1/chat/completions")
			if len(reqs) != 3 { // one warm-up, two measured
				t.Fatalf("server saw %d chat requests, want 3", len(reqs))
			}
			nonceRe := regexp.MustCompile(`^\[([0-9a-f]{12})\] `)
			seen := map[string]bool{}
			for _, r := range reqs {
				b := r.body
				if b["model"] != "sim" || b["stream"] != true || b["temperature"] != 0.0 || b["top_p"] != 0.5 {
					t.Errorf("body %v", b)
				}
				so, _ := b["stream_options"].(map[string]any)
				if so["include_usage"] != true || so["continuous_usage_stats"] != true {
					t.Errorf("stream_options %v", so)
				}
				_, hasIgnore := b["ignore_eos"]
				if hasIgnore != (mode == "pinned") {
					t.Errorf("ignore_eos present=%v in %s mode", hasIgnore, mode)
				}
				if got := r.header.Get("Authorization"); got != "Bearer sk-secret-123" {
					t.Errorf("Authorization = %q", got)
				}
				if r.header.Get("X-Team") != "bench" {
					t.Errorf("plan header missing")
				}
				msgs, _ := b["messages"].([]any)
				m0, _ := msgs[0].(map[string]any)
				content, _ := m0["content"].(string)
				mm := nonceRe.FindStringSubmatch(content)
				if mm == nil {
					t.Fatalf("prompt does not lead with a nonce: %.40q", content)
				}
				if seen[mm[1]] {
					t.Errorf("nonce %s sent twice", mm[1])
				}
				seen[mm[1]] = true
			}
			for _, r := range col.measured() {
				tr := truth(t, s, r.Nonce)
				if tr.IgnoreEOS != (mode == "pinned") {
					t.Errorf("sim saw ignore_eos=%v", tr.IgnoreEOS)
				}
				if mode == "pinned" && r.OutputTokens != 8 {
					t.Errorf("pinned output %d tokens, want 8", r.OutputTokens)
				}
				if strings.Contains(r.Error, "secret") {
					t.Errorf("secret leaked into record")
				}
			}
			if p := res.Points[0]; mode == "pinned" && p.OutputLenMismatch != 0 {
				t.Errorf("pinned mismatch %d", p.OutputLenMismatch)
			}
		})
	}
}

// TestStreamVariants runs the engine against the simulator's stream shapes.
func TestStreamVariants(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*sim.Config)
		api  string
	}{
		{"usage in finish chunk", func(c *sim.Config) { c.UsageInFinishChunk = true }, "chat"},
		{"role in every chunk", func(c *sim.Config) { c.RoleInEveryChunk = true }, "chat"},
		{"several tokens per chunk", func(c *sim.Config) { c.TokensPerChunk = 3 }, "chat"},
		{"completions api", func(c *sim.Config) {}, "completions"},
		{"speculative decoding", func(c *sim.Config) { c.SpecK = 3 }, "chat"},
		// llama-server's: a connection closed after each stream (a request
		// on it re-sent on a new one, timed from that send), timings.
		{"closes after each stream", func(c *sim.Config) { c.CloseAfterStream, c.LlamaTimings = true, true }, "chat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastSim()
			tt.mod(&cfg)
			s := startSim(t, cfg)
			e, col := newEngine(t, s.URL(), nil)
			st := stage(10, 3)
			st.API = scenario.API(tt.api)
			if cfg.CloseAfterStream {
				st.Requests.Each = 6 // a second wave, on the first wave's connections
			}
			res := runStage(t, e, synthPlan(40, ""), st)
			if p := res.Points[0]; p.Failed != 0 || p.Completed != max(3, st.Requests.Each) {
				t.Fatalf("completed %d failed %d: %v", p.Completed, p.Failed, p.Error)
			}
			if p := res.Points[0]; cfg.CloseAfterStream && p.Reconnects == 0 {
				t.Error("no request found its connection closed")
			}
			for _, r := range col.measured() {
				tr := truth(t, s, r.Nonce)
				if !r.OK || r.OutputTokens != tr.OutputTokens || r.OutputTokens != 10 || r.Chunks != tr.Chunks || !r.UsageReported || r.FinishReason != tr.FinishReason || r.FinishReason == "" {
					t.Errorf("record %+v vs sim tokens %d chunks %d", r, tr.OutputTokens, tr.Chunks)
				}
				if want := ms(tr.TokenWritten[0].Sub(r.Start)); r.TTFTMs == nil || !within(*r.TTFTMs, want) {
					t.Errorf("TTFT %v, sim %.3f", deref(r.TTFTMs), want)
				}
				if r.TPOTMs == nil || math.Abs(*r.TPOTMs-(r.E2EMs-*r.TTFTMs)/9) > 1e-9 {
					t.Errorf("TPOT %v does not follow (E2E-TTFT)/(n-1)", deref(r.TPOTMs))
				}
			}
		})
	}
}

// TestReasoningTTFT: TTFT counts the first reasoning token; TTFAT the first answer token.
func TestReasoningTTFT(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		t.Run(field, func(t *testing.T) {
			cfg := fastSim()
			cfg.ReasoningTokens = 4
			cfg.ReasoningField = field
			s := startSim(t, cfg)
			e, col := newEngine(t, s.URL(), nil)
			runStage(t, e, synthPlan(40, ""), stage(10, 2))
			for _, r := range col.measured() {
				tr := truth(t, s, r.Nonce)
				if r.TTFTMs == nil || r.TTFATMs == nil {
					t.Fatalf("ttft %v ttfat %v", deref(r.TTFTMs), deref(r.TTFATMs))
				}
				if want := ms(tr.TokenWritten[0].Sub(r.Start)); !within(*r.TTFTMs, want) {
					t.Errorf("TTFT %.3f, sim's first reasoning token %.3f", *r.TTFTMs, want)
				}
				if want := ms(tr.TokenWritten[4].Sub(r.Start)); !within(*r.TTFATMs, want) {
					t.Errorf("TTFAT %.3f, sim's first answer token %.3f", *r.TTFATMs, want)
				}
				if *r.TTFATMs <= *r.TTFTMs || r.ReasoningChunks != 4 {
					t.Errorf("ttfat %.3f <= ttft %.3f or reasoning chunks %d", *r.TTFATMs, *r.TTFTMs, r.ReasoningChunks)
				}
			}
		})
	}
}

// TestFailureClasses: each injected fault lands in its class, with a message.
func TestFailureClasses(t *testing.T) {
	tests := []struct {
		name   string
		faults sim.Faults
		tmo    scenario.Timeouts
		kind   string
		msg    string
	}{
		{"429", sim.Faults{HTTP429: 1}, scenario.Timeouts{}, "http_429", "simulated"},
		{"500", sim.Faults{HTTP500: 1}, scenario.Timeouts{}, "http_500", "simulated"},
		{"disconnect", sim.Faults{Disconnect: 1, AfterTokens: 3}, scenario.Timeouts{}, result.ErrTruncated, "stream cut"},
		{"truncate", sim.Faults{Truncate: 1, AfterTokens: 3}, scenario.Timeouts{}, result.ErrTruncated, "without finish_reason"},
		{"malformed", sim.Faults{Malformed: 1, AfterTokens: 3}, scenario.Timeouts{}, result.ErrMalformed, "unparseable chunk"},
		{"html", sim.Faults{HTML: 1}, scenario.Timeouts{}, result.ErrMalformed, "not an event stream"},
		{"error in stream", sim.Faults{ErrorInStream: 1, AfterTokens: 3}, scenario.Timeouts{}, result.ErrServer, ""},
		{"stall", sim.Faults{Stall: 1, AfterTokens: 3}, scenario.Timeouts{Idle: scenario.Duration(150 * time.Millisecond)}, result.ErrTimeout, "idle timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastSim()
			cfg.Faults = tt.faults
			s := startSim(t, cfg)
			e, col := newEngine(t, s.URL(), &scenario.Endpoint{Timeouts: tt.tmo})
			st := stage(10, 2)
			w := 0
			st.Warmup = &w
			res := runStage(t, e, synthPlan(40, ""), st)
			p := res.Points[0]
			if p.Failed != 2 || p.Completed != 0 || p.ErrorsByKind[tt.kind] != 2 {
				t.Fatalf("failed %d completed %d kinds %v", p.Failed, p.Completed, p.ErrorsByKind)
			}
			for _, r := range col.measured() {
				if r.OK || r.ErrorKind != tt.kind || !strings.Contains(r.Error, tt.msg) || r.Error == "" {
					t.Errorf("record kind %q error %q", r.ErrorKind, r.Error)
				}
			}
		})
	}
}

func TestTimeoutsAndConnect(t *testing.T) {
	t.Run("first token", func(t *testing.T) {
		cfg := fastSim()
		cfg.TTFTMs = 400
		s := startSim(t, cfg)
		e, col := newEngine(t, s.URL(), &scenario.Endpoint{Timeouts: scenario.Timeouts{FirstToken: scenario.Duration(80 * time.Millisecond)}})
		st := stage(4, 1)
		w := 0
		st.Warmup = &w
		runStage(t, e, synthPlan(20, "reference"), st)
		r := col.measured()[0]
		if r.ErrorKind != result.ErrTimeout || !strings.Contains(r.Error, "first token") || r.E2EMs > 300 {
			t.Fatalf("kind %q error %q after %.1f ms", r.ErrorKind, r.Error, r.E2EMs)
		}
	})
	t.Run("request", func(t *testing.T) {
		s := startSim(t, fastSim())
		e, col := newEngine(t, s.URL(), &scenario.Endpoint{Timeouts: scenario.Timeouts{Request: scenario.Duration(60 * time.Millisecond)}})
		st := stage(200, 1)
		w := 0
		st.Warmup = &w
		runStage(t, e, synthPlan(20, "reference"), st)
		r := col.measured()[0]
		if r.ErrorKind != result.ErrTimeout || !strings.Contains(r.Error, "request timeout") {
			t.Fatalf("kind %q error %q", r.ErrorKind, r.Error)
		}
	})
	t.Run("connect", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		e, col := newEngine(t, "http://"+addr+"/v1", nil)
		st := stage(4, 2)
		w := 0
		st.Warmup = &w
		res := runStage(t, e, synthPlan(20, "reference"), st)
		if p := res.Points[0]; p.Failed != 2 || p.ErrorsByKind[result.ErrConnect] != 2 {
			t.Fatalf("failed %d kinds %v", p.Failed, p.ErrorsByKind)
		}
		for _, r := range col.measured() {
			if !strings.Contains(r.Error, "refused") {
				t.Errorf("connect error %q", r.Error)
			}
		}
	})
}

// TestInterrupted: cancelling the run mid-level returns the point so far.
func TestInterrupted(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := stage(2000, 4, 8)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err := runStageCtx(ctx, e, synthPlan(20, "reference"), st)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 1 || !res.Points[0].Interrupted {
		t.Fatalf("points %d, interrupted %v", len(res.Points), len(res.Points) > 0 && res.Points[0].Interrupted)
	}
	p := res.Points[0]
	if p.ErrorsByKind[result.ErrInterrupted] != 4 {
		t.Fatalf("kinds %v", p.ErrorsByKind)
	}
	for _, r := range col.measured() {
		if r.ErrorKind != result.ErrInterrupted || r.TTFTMs == nil {
			t.Errorf("record %q %q ttft %v", r.ErrorKind, r.Error, deref(r.TTFTMs))
		}
	}
}

// TestCalibration: synthetic prompts land within 2% (or 3 tokens) of the
// requested input tokens, calibrated by /tokenize or, without it, by a probe
// request. The tokens are the nonce's business: 12 random hex digits
// tokenize to a count that varies from nonce to nonce, and the mean of four
// prompts of 128 tokens was once 2.75 off.
func TestCalibration(t *testing.T) {
	s := startSim(t, fastSim())
	for _, tc := range []struct {
		name  string
		block []string
		api   string
	}{
		{"tokenize chat", nil, "chat"},
		{"tokenize completions", nil, "completions"},
		{"probe", []string{"/tokenize"}, "chat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := startSpy(t, s, tc.block...)
			e, col := newEngine(t, sp.URL+"/v1", nil)
			for _, n := range []int{128, 1024, 3000} {
				st := stage(2, 4)
				st.API = scenario.API(tc.api)
				res := runStage(t, e, synthPlan(n, ""), st)
				p := res.Points[0]
				if p.MeanInputTokens == nil || math.Abs(*p.MeanInputTokens-float64(n)) > max(0.02*float64(n), 3) {
					t.Errorf("asked %d input tokens, server counted a mean of %v", n, deref(p.MeanInputTokens))
				}
			}
			if len(col.measured()) != 12 {
				t.Fatalf("%d records", len(col.measured()))
			}
			if tc.block != nil && len(sp.requests("/tokenize")) != 0 {
				t.Fatalf("blocked /tokenize reached the sim")
			}
			// Calibrated once per model and API, not per stage.
			if tc.block == nil && len(sp.requests("/tokenize")) != 9 {
				t.Errorf("/tokenize called %d times, want 9 (one calibration)", len(sp.requests("/tokenize")))
			}
		})
	}
	t.Run("reference sizing", func(t *testing.T) {
		sp := startSpy(t, s)
		e, _ := newEngine(t, sp.URL+"/v1", nil)
		runStage(t, e, synthPlan(300, "reference"), stage(2, 1))
		r := sp.requests("/v1/chat/completions")
		content := r[len(r)-1].body["messages"].([]any)[0].(map[string]any)["content"].(string)
		words := strings.Fields(content)
		if len(words) != 1+int(300/0.75) || words[1] != "the" || words[2] != "quick" {
			t.Fatalf("reference prompt has %d words (want %d): %.60q", len(words), 1+int(300/0.75), content)
		}
	})
}

// TestSuppliedPrompts: loaded prompts cycle in order, keep their max_tokens,
// and still lead with a nonce.
func TestSuppliedPrompts(t *testing.T) {
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"p": {Loaded: []scenario.Prompt{
		{Text: "alpha one"},
		{Messages: []scenario.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "beta two"}}, MaxTokens: 3},
	}}}}
	st := stage(5, 4)
	st.Mode = "natural"
	w := 0
	st.Warmup = &w
	runStage(t, e, plan, st)
	reqs := sp.requests("/v1/chat/completions")
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	byNonce := map[string]map[string]any{}
	for _, r := range reqs {
		m0 := r.body["messages"].([]any)[0].(map[string]any)["content"].(string)
		byNonce[m0[1:13]] = r.body
	}
	for _, r := range col.measured() {
		b := byNonce[r.Nonce]
		msgs := b["messages"].([]any)
		first := msgs[0].(map[string]any)["content"].(string)
		wantText, wantMax := "alpha one", 5.0
		if r.Seq%2 == 1 {
			wantText, wantMax = "be brief", 3.0
			if len(msgs) != 2 {
				t.Errorf("messages %v", msgs)
			}
		}
		if first != "["+r.Nonce+"] "+wantText || b["max_tokens"] != wantMax {
			t.Errorf("seq %d: first message %q max_tokens %v", r.Seq, first, b["max_tokens"])
		}
	}
}

// TestDurationLevel: a duration-bounded level keeps its workers busy until
// the time is up, then lets in-flight requests finish.
func TestDurationLevel(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := stage(4, 3)
	st.Duration = scenario.Duration(250 * time.Millisecond)
	res := runStage(t, e, synthPlan(20, "reference"), st)
	p := res.Points[0]
	if p.Failed != 0 || p.Completed < 6 || p.DurationS < 0.25 || p.DurationS > 0.6 {
		t.Fatalf("completed %d failed %d in %.3f s", p.Completed, p.Failed, p.DurationS)
	}
	if col.warmups() != 1 {
		t.Fatalf("%d warm-ups, want 1", col.warmups())
	}
	for _, r := range col.measured() {
		if r.DispatchLagMs < 0 || r.DispatchLagMs > 50 {
			t.Errorf("dispatch lag %.3f ms", r.DispatchLagMs)
		}
	}
	if p.ClientCPUPercent == nil || p.DispatchLagP99Ms == nil {
		t.Fatalf("cpu %v lag %v", deref(p.ClientCPUPercent), deref(p.DispatchLagP99Ms))
	}
}

func TestServerMetricsAndProgress(t *testing.T) {
	cfg := fastSim()
	cfg.SpecK = 2
	s := startSim(t, cfg)
	var progress []Progress
	e, err := NewEngine(Target{Name: "x", Endpoint: defaulted(&scenario.Endpoint{Model: "sim"}), BaseURL: s.URL()},
		Options{OnProgress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res := runStage(t, e, synthPlan(20, "reference"), stage(30, 2))
	p := res.Points[0]
	if p.SpecAcceptanceRate == nil || p.SpecDraftTokens == nil || *p.SpecDraftTokens <= 0 {
		t.Errorf("spec acceptance %v drafts %v", deref(p.SpecAcceptanceRate), p.SpecDraftTokens)
	}
	if len(progress) == 0 || progress[len(progress)-1].Done != 2 || progress[len(progress)-1].Total != 2 {
		t.Errorf("progress %+v", progress)
	}
}

func TestWaitReady(t *testing.T) {
	s := startSim(t, fastSim())
	e, _ := newEngine(t, s.URL(), nil)
	if err := e.WaitReady(context.Background(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	e2, _ := newEngine(t, "http://user:pw@"+addr+"/v1", nil)
	err := e2.WaitReady(context.Background(), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), addr+"/v1/models") || strings.Contains(err.Error(), "pw") {
		t.Fatalf("error %v", err)
	}
}
