package servermetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/runnerbench/runner/sim"
	"github.com/runnerbench/runner/sim/simconfig"
)

// TestSimulator scrapes the built-in simulator over loopback around real
// requests and checks the deltas against what was sent: generation tokens
// equal what ignore_eos pinned, speculative counters are consistent, and a
// repeated prompt shows up as prefix-cache hits while unique ones do not.
func TestSimulator(t *testing.T) {
	cfg := sim.FastConfig()
	cfg.SpecK = 3
	srv, err := sim.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := srv.URL() // http://127.0.0.1:PORT/v1
	s := New(nil, strings.TrimSuffix(base, "/v1")+"/metrics", Names{})
	body := strings.Repeat("the quick brown fox jumps over a lazy dog ", 40)

	send := func(prompt string) {
		t.Helper()
		payload := fmt.Sprintf(`{"model":"sim","messages":[{"role":"user","content":%q}],"max_tokens":32,"ignore_eos":true,"stream":true}`, prompt)
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request: %d %v", resp.StatusCode, err)
		}
	}
	measure := func(prompts ...string) *Delta {
		t.Helper()
		before, err := s.Read(context.Background())
		if err != nil || before == nil {
			t.Fatalf("read before: %v %v", before, err)
		}
		for _, p := range prompts {
			send(p)
		}
		after, err := s.Read(context.Background())
		if err != nil || after == nil {
			t.Fatalf("read after: %v %v", after, err)
		}
		return Diff(before, after)
	}

	// Unique leading words (nonces): nothing to reuse.
	d := measure("[n1] "+body, "[n2] "+body, "[n3] "+body, "[n4] "+body)
	for _, name := range []string{simconfig.MetricLagRatio, simconfig.MetricTTFTLagRatio, simconfig.MetricDecodeLagRatio, simconfig.MetricE2ELagRatio} {
		if h, ok := d.Histograms[name]; !ok || h.Count != 4 || len(h.Buckets) != len(simconfig.LagRatioBounds) {
			t.Errorf("simulator's %s histogram delta = %+v, want 4 requests in %d buckets", name, h, len(simconfig.LagRatioBounds))
		}
	}
	if got := d.Counters[simconfig.MetricSteps]; got < 4*32/(1+3) {
		t.Errorf("simulator's steps delta = %v, want at least one per 1+K generated tokens", got)
	}
	if got := d.Counters["vllm:generation_tokens"]; got != 4*32 {
		t.Errorf("generation tokens delta = %v, want %d", got, 4*32)
	}
	if d.Counters["vllm:prompt_tokens"] <= 4*300 {
		t.Errorf("prompt tokens delta = %v, want > 1200", d.Counters["vllm:prompt_tokens"])
	}
	if d.SpecDrafts == nil || d.SpecDraftTokens == nil || d.SpecAcceptedTokens == nil {
		t.Fatalf("no spec counters: %+v", d)
	}
	if *d.SpecDraftTokens != 3**d.SpecDrafts || *d.SpecAcceptedTokens > *d.SpecDraftTokens {
		t.Errorf("inconsistent spec counters: drafts %v draft tokens %v accepted %v", *d.SpecDrafts, *d.SpecDraftTokens, *d.SpecAcceptedTokens)
	}
	if r := d.AcceptanceRate(); r == nil || *r <= 0 || *r >= 1 {
		t.Errorf("acceptance rate %v", r)
	}
	if l := d.AcceptanceLength(); l == nil || *l != 1 + *d.SpecAcceptedTokens / *d.SpecDrafts {
		t.Errorf("acceptance length %v", l)
	}
	if r := d.PrefixCacheHitRate(); r == nil || *r > 0.05 {
		t.Errorf("prefix hit rate with nonces = %v, want about 0", r)
	}

	// The same prompt four times: all but the first are served from cache.
	d = measure(body, body, body, body)
	if r := d.PrefixCacheHitRate(); r == nil || *r < 0.6 {
		t.Errorf("prefix hit rate of a repeated prompt = %v, want about 0.75", r)
	}
}
