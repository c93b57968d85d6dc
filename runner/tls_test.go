package runner

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// TestTLS: certificates are verified by default, ca_file (relative to the
// plan) adds trust, insecure_skip_verify turns checking off with a warning,
// and HTTP/2 is used when the server offers it.
func TestTLS(t *testing.T) {
	s := startSim(t, fastSim())
	var mu sync.Mutex
	protos := map[string]int{}
	h := s.Handler()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.Proto]++
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	run := func(tls *scenario.TLS) (*result.Stage, *collector, *Engine) {
		ep := &scenario.Endpoint{Model: "sim", BaseURL: ts.URL + "/v1", TLS: tls}
		col := &collector{}
		e, err := NewEngine(Target{Name: "tls", Endpoint: defaulted(ep), BaseURL: ts.URL + "/v1"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		collectors.Store(e, col)
		t.Cleanup(func() { collectors.Delete(e); e.Close() })
		st := stage(4, 2)
		w := 0
		st.Warmup = &w
		return runStage(t, e, synthPlan(20, "reference"), st), col, e
	}

	res, col, _ := run(nil)
	if p := res.Points[0]; p.ErrorsByKind[result.ErrConnect] != 2 {
		t.Fatalf("untrusted certificate: kinds %v", p.ErrorsByKind)
	}
	if r := col.measured()[0]; !strings.Contains(r.Error, "certificate") {
		t.Errorf("error %q does not name the certificate problem", r.Error)
	}

	// The CA bytes come from the loader, which checked the file is inside
	// the plan's tree; the engine refuses a ca_file it was not given.
	ep := &scenario.Endpoint{Model: "sim", BaseURL: ts.URL + "/v1", TLS: &scenario.TLS{CAFile: "ca.pem"}}
	if _, err := NewEngine(Target{Name: "tls", Endpoint: ep}, Options{}); err == nil || !strings.Contains(err.Error(), "not read by the plan loader") {
		t.Errorf("ca_file without the loader's bytes: %v", err)
	}
	res, _, _ = run(&scenario.TLS{CAFile: "ca.pem", CAPEM: ca, ServerName: "example.com"})
	if p := res.Points[0]; p.Failed != 0 || p.Completed != 2 {
		t.Fatalf("ca_file + server_name: failed %d (%v)", p.Failed, p.Error)
	}
	res, _, _ = run(&scenario.TLS{CAFile: "ca.pem", CAPEM: ca, ServerName: "wrong.invalid"})
	if p := res.Points[0]; p.ErrorsByKind[result.ErrConnect] != 2 {
		t.Fatalf("wrong server_name accepted: kinds %v", p.ErrorsByKind)
	}
	res, _, _ = run(&scenario.TLS{InsecureSkipVerify: true})
	if p := res.Points[0]; p.Failed != 0 {
		t.Fatalf("insecure_skip_verify: failed %d (%v)", p.Failed, p.Error)
	}
	// HTTP/2's streams share one connection, read by one goroutine: its
	// latest read is not a stream's, so the runner's clock times them, and
	// the level says so.
	if p := res.Points[0]; p.TimestampSource == nil || *p.TimestampSource != "user" {
		t.Errorf("over HTTP/2: timestamp_source %v, want user", deref(p.TimestampSource))
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "insecure_skip_verify") {
		t.Errorf("no warning about insecure_skip_verify in %q", res.Warnings)
	}
	mu.Lock()
	defer mu.Unlock()
	if protos["HTTP/2.0"] == 0 || protos["HTTP/1.1"] != 0 {
		t.Errorf("protocols seen %v, want HTTP/2.0 only", protos)
	}
}

// TestTLSKernelTimes: over HTTP/1.1 on TLS every token chunk is timed by
// the kernel's receive time (the TLS connection wraps the timed TCP one), and
// each TTFT lies in a write of the simulator's, as TestAccuracy holds it.
func TestTLSKernelTimes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kernel receive times are read on Linux only")
	}
	s := startSim(t, fastSim())
	ts := httptest.NewUnstartedServer(s.Handler()) // HTTP/1.1 only: EnableHTTP2 unset
	ts.StartTLS()
	defer ts.Close()
	ep := &scenario.Endpoint{Model: "sim", BaseURL: ts.URL + "/v1", TLS: &scenario.TLS{InsecureSkipVerify: true}}
	col := &collector{}
	e, err := NewEngine(Target{Name: "tls1", Endpoint: defaulted(ep), BaseURL: ts.URL + "/v1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	collectors.Store(e, col)
	t.Cleanup(func() { collectors.Delete(e); e.Close() })
	res := runStage(t, e, synthPlan(20, "reference"), stage(8, 4))
	p := res.Points[0]
	if p.Failed != 0 || p.TimestampSource == nil || *p.TimestampSource != "kernel" || p.ClientReadLagP50Ms == nil {
		t.Fatalf("failed %d, timestamp_source %v, read lag p50 %v", p.Failed, deref(p.TimestampSource), deref(p.ClientReadLagP50Ms))
	}
	for _, r := range col.measured() {
		tr := truth(t, s, r.Nonce)
		if _, last := writeOf(tr, r.Start, *r.TTFTMs); last < 0 {
			t.Errorf("%s: TTFT %.3f ms lies in no write of the response (the first token's returned at %.3f ms)", r.Nonce, *r.TTFTMs, ms(tr.TokenWritten[0].Sub(r.Start)))
		}
	}
	t.Logf("over TLS: timestamp_source %s, read lag p50 %v ms", *p.TimestampSource, *p.ClientReadLagP50Ms)
}

func TestSharedPrefix(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	plan := synthPlan(200, "")
	plan.Prompts["p"].Synthetic.SharedPrefix = &scenario.SharedPrefix{Groups: 2, PrefixTokens: 128}
	st := stage(4, 1)
	st.Requests.Each = 6
	res := runStage(t, e, plan, st)
	if p := res.Points[0]; p.Failed != 0 {
		t.Fatalf("failed %d", p.Failed)
	}
	// The group prefix leads, so the simulator cannot key these by nonce;
	// at concurrency 1 its arrival order is the dispatch order (after the warm-up).
	truths := s.Truth()
	reqs := col.measured()
	if len(truths) != len(reqs)+1 {
		t.Fatalf("%d truths for %d requests", len(truths), len(reqs))
	}
	cached := 0
	for i, r := range reqs {
		tr := truths[i+1]
		if tr.Nonce != fmt.Sprintf("prefix-%d", r.Seq%2) {
			t.Errorf("seq %d leads with %q", r.Seq, tr.Nonce)
		}
		if r.Seq >= 2 && tr.CachedTokens < 100 {
			t.Errorf("seq %d: %d cached tokens, want the shared prefix (~128)", r.Seq, tr.CachedTokens)
		}
		cached += tr.CachedTokens
		if tr.PromptTokens < 200*0.98-nonceSpread || tr.PromptTokens > 200*1.02+nonceSpread {
			t.Errorf("seq %d: %d prompt tokens, want 200 ±2%% ±%d", r.Seq, tr.PromptTokens, nonceSpread)
		}
	}
	if cached == 0 {
		t.Fatal("no prefix-cache hits")
	}
}
