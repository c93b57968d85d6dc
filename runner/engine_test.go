package runner

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// TestAccuracy holds the engine's token times to the times the simulator
// wrote each token, request by request, at concurrency 1, 64 and 512, on any
// machine, quiet or busy, with no retry.
//
// The bound is what kernel receive timestamps promise (docs/wire.md). A
// chunk's time is the kernel's receive time of the read that brought it,
// which on loopback is the instant the simulator's kernel sent a write of
// the response: during the write call ([TokenWriteBegan, TokenWritten]), or
// at its transmit time when TCP held the bytes (TokenSent). It is the write
// that carried the chunk, or a later one when the engine read the chunk
// only after that one had arrived too (TCP merges unread segments and keeps
// the latest's time; the engine counts those chunks: the level's shared
// ones). So every TTFT lies in the write of the first token or a later one,
// never before; every E2E in the write of the last token (which carries
// [DONE]) or of the body's end (save after a retransmission, which has no
// transmit time to hold it to); and the level's inter-token gaps of
// a request add up to its last token's time minus its first, so their sum
// lies between the last write's start and the E2E, less the TTFTs. A time
// read from the runner's clock after the read lands outside every write
// (the runner's own lag), and fails.
func TestAccuracy(t *testing.T) {
	for _, conc := range []int{1, 64, 512} {
		t.Run(fmt.Sprint("c=", conc), func(t *testing.T) {
			if runtime.GOOS != "linux" {
				t.Skip("kernel receive times are read on Linux only")
			}
			if testing.Short() && conc > 64 {
				if os.Getenv("CI") != "" || os.Getenv(engines.RequireEnv) == "1" {
					t.Fatal("-short skips c=512, which CI must run")
				}
				t.Skip("short")
			}
			cfg := fastSim()
			cfg.MaxNumSeqs = 1024
			if conc > 64 {
				// 512 streams and the simulator share two cores: every
				// decode step is a burst of 512 writes and 512 reads.
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
			if p.TimestampSource == nil || *p.TimestampSource != "kernel" {
				t.Fatalf("timestamp_source %v, want kernel", deref(p.TimestampSource))
			}
			lv := col.levelRecords()[0]
			misses, exact, late := kernelTimeMisses(t, reqs, s.truths(t), lv, out)
			for _, m := range misses {
				t.Error(m)
			}
			t.Logf("%d of %d TTFTs inside the first token's write, %d in a later one (%d token chunks shared a read)", exact, len(reqs), late, lv.Client.Stamps.Shared)
			t.Logf("c=%d: read lag p50 %v p99 %v max %v ms, client-bound %v %v, ttft_p50 %v ms, itl_mean %v ms",
				conc, deref(p.ClientReadLagP50Ms), deref(p.ClientReadLagP99Ms), deref(p.ClientReadLagMaxMs), p.ClientBottleneck, p.ClientBottleneckBy, deref(p.TTFTP50Ms), deref(p.ITLMeanMs))
		})
	}
}

// TestAccuracyFailsOnUserTimes: TestAccuracy's bound fails times read from
// the runner's clock after each read (Options.UserTimes, as before kernel
// times): the runner's own lag, however small, puts them outside the
// simulator's writes.
func TestAccuracyFailsOnUserTimes(t *testing.T) {
	s := startRemoteSim(t, fastSim())
	ep := defaulted(&scenario.Endpoint{Model: "sim", BaseURL: s.url})
	col := &collector{}
	e, err := NewEngine(Target{Name: "user", Endpoint: ep, BaseURL: s.url}, Options{UserTimes: true})
	if err != nil {
		t.Fatal(err)
	}
	collectors.Store(e, col)
	t.Cleanup(func() { collectors.Delete(e); e.Close() })
	const out = 12
	res := runStage(t, e, synthPlan(64, ""), stage(out, 16))
	if p := res.Points[0]; p.Failed != 0 || p.TimestampSource == nil || *p.TimestampSource != "user" {
		t.Fatalf("failed %d, timestamp_source %v", p.Failed, deref(p.TimestampSource))
	}
	reqs := col.measured()
	misses, exact, _ := kernelTimeMisses(t, reqs, s.truths(t), col.levelRecords()[0], out)
	if len(misses) < len(reqs)/2 {
		t.Errorf("user times: %d misses of %d requests (%d TTFTs inside the first write), want most: %q", len(misses), len(reqs), exact, misses)
	}
}

// kernelTimeMisses holds a level's records to the simulator's truth as
// TestAccuracy states (tokens, TTFT, E2E, the sum of the level's gaps) and
// returns every miss; exact and late count the TTFTs inside the first
// token's write and inside a later one. A time after every write of a
// response whose segments the simulator's kernel retransmitted is not
// judged (a lost segment's bytes arrive with the retransmission, which has
// no transmit time), and is logged.
func kernelTimeMisses(t *testing.T, reqs []*result.Request, truths map[string]sim.RequestTruth, lv *result.LevelRecord, out int) (misses []string, exact, late int) {
	t.Helper()
	resent := 0 // times after every write of a response the simulator's kernel retransmitted part of
	defer func() {
		if resent > 0 {
			t.Logf("%d times after every write of responses whose segments the simulator's kernel retransmitted: not judged", resent)
		}
	}()
	var gapLo, gapHi time.Duration // bounds of the sum of the level's gaps
	for _, r := range reqs {
		tr, ok := truths[r.Nonce]
		if !ok {
			t.Fatalf("the simulator has no request with nonce %s", r.Nonce)
		}
		if r.OutputTokens != tr.OutputTokens || r.OutputTokens != out || r.Chunks != tr.Chunks || r.InputTokens != tr.PromptTokens {
			t.Fatalf("%s: tokens %d/%d chunks %d, sim sent %d/%d in %d chunks", r.Nonce, r.InputTokens, r.OutputTokens, r.Chunks, tr.PromptTokens, tr.OutputTokens, tr.Chunks)
		}
		if r.TTFTMs == nil {
			t.Fatalf("%s: no TTFT", r.Nonce)
		}
		last := len(tr.TokenWritten) - 1
		ttft, e2e := r.Start.Add(msDur(*r.TTFTMs)), r.Start.Add(msDur(r.E2EMs))
		switch first, last := writeOf(tr, r.Start, *r.TTFTMs); {
		case first == 0:
			exact++
		case last > 0:
			late++
		case tr.Retransmits > 0 && ttft.After(tr.TokenWriteBegan[0]):
			resent++ // a lost segment arrives with its retransmission, which has no transmit time
		default:
			misses = append(misses, fmt.Sprintf("%s: TTFT %.3f ms lies in no write of the response (the first token's began at %.3f ms, returned at %.3f ms)",
				r.Nonce, *r.TTFTMs, ms(tr.TokenWriteBegan[0].Sub(r.Start)), ms(tr.TokenWritten[0].Sub(r.Start))))
		}
		if _, j := writeOf(tr, r.Start, r.E2EMs); j < 0 && tr.Retransmits > 0 && e2e.After(tr.TokenWriteBegan[last]) {
			resent++
		} else if j < last {
			misses = append(misses, fmt.Sprintf("%s: E2E %.3f ms lies in write %d, not the last token's (%d: %.3f to %.3f ms) or the body's end (%.3f to %.3f ms)", r.Nonce, r.E2EMs, j, last,
				ms(tr.TokenWriteBegan[last].Sub(r.Start)), ms(tr.TokenWritten[last].Sub(r.Start)), ms(tr.BodyEndBegan.Sub(r.Start)), ms(tr.BodyEnd.Sub(r.Start)))+
				fmt.Sprintf(" [retransmits %d, sent %v, body sent %v]", tr.Retransmits, tr.TokenSent[last].Sub(r.Start), tr.BodyEndSent.Sub(r.Start)))
		}
		gapLo += tr.TokenWriteBegan[last].Sub(ttft)
		gapHi += e2e.Sub(ttft)
	}
	var shared int64
	if st := lv.Client.Stamps; st != nil {
		shared = st.Shared
	}
	if int64(late) > shared {
		misses = append(misses, fmt.Sprintf("%d TTFTs carry a later write's time, but only %d token chunks were counted as sharing a read", late, shared))
	}
	// Each request's times are rounded to the nanosecond in the records.
	slack := time.Duration(2 * len(reqs))
	if sum := time.Duration(lv.ITL.SumNs); sum < gapLo-slack || sum > gapHi+slack {
		misses = append(misses, fmt.Sprintf("the level's gaps sum to %v, outside [%v, %v]: the last writes' starts and the E2Es, less the TTFTs", sum, gapLo, gapHi))
	}
	return misses, exact, late
}

// msDur is a record's milliseconds as a duration.
func msDur(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }

func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func deref[T any](p *T) any {
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

// TestStreamVariants runs the engine against the simulator's stream shapes,
// each TTFT held to a write of the response (TestAccuracy's bound).
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
				if r.TTFTMs == nil {
					t.Errorf("%s: no TTFT", r.Nonce)
				} else if _, last := writeOf(tr, r.Start, *r.TTFTMs); last < 0 {
					t.Errorf("%s: TTFT %.3f ms lies in no write of the response (the first token's returned at %.3f ms)", r.Nonce, *r.TTFTMs, ms(tr.TokenWritten[0].Sub(r.Start)))
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
				// As TestAccuracy: each time lies in the write of its token
				// or of a later one (a read that took both in).
				if _, last := writeOf(tr, r.Start, *r.TTFTMs); last < 0 {
					t.Errorf("TTFT %.3f lies in no write; the sim's first reasoning token was written at %.3f", *r.TTFTMs, ms(tr.TokenWritten[0].Sub(r.Start)))
				}
				if _, last := writeOf(tr, r.Start, *r.TTFATMs); last < 4 {
					t.Errorf("TTFAT %.3f lies in write %d, not the first answer token's (4, written at %.3f) or a later one", *r.TTFATMs, last, ms(tr.TokenWritten[4].Sub(r.Start)))
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
