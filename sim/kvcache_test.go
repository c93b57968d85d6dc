package sim

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKVCache: with a KV cache of 12 blocks of 16 tokens, four requests of
// about 20 prompt tokens and 60 output tokens (5 blocks each at the end)
// cannot all run at once: admission waits for room, decode preempts the
// latest admitted, and yet every request completes with all its tokens. The
// usage gauge never passes 1, the preemption counter agrees with the
// truth, the gauge is 0 once idle, and a request that could never fit is a
// 400.
func TestKVCache(t *testing.T) {
	cfg := FastConfig()
	cfg.KVCacheBlocks = 12
	s := startSim(t, cfg)
	var (
		mu    sync.Mutex
		peak  float64
		reads int
		stop  = make(chan struct{})
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			u := scrape(t, s)["vllm:kv_cache_usage_perc"].GetMetric()[0].GetGauge().GetValue()
			mu.Lock()
			peak, reads = max(peak, u), reads+1
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res := doStream(t, t.Context(), s, "/chat/completions",
				chatBody("["+nonce()+"] "+strings.Repeat("word ", 12), 60, map[string]any{"ignore_eos": true}))
			if res.status != http.StatusOK || res.err != nil {
				t.Errorf("status %d, %v", res.status, res.err)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-done
	preempted := 0
	for _, tr := range s.Truth() {
		if tr.OutputTokens != 60 || tr.FinishReason != "length" {
			t.Errorf("request %d: %d tokens, finish %q", tr.Index, tr.OutputTokens, tr.FinishReason)
		}
		preempted += tr.Preemptions
	}
	fams := scrape(t, s)
	counter := fams["vllm:num_preemptions_total"].GetMetric()[0].GetCounter().GetValue()
	if preempted == 0 || int(counter) != preempted {
		t.Errorf("preemptions: truth %d, counter %v; want equal and above 0", preempted, counter)
	}
	if u := fams["vllm:kv_cache_usage_perc"].GetMetric()[0].GetGauge().GetValue(); u != 0 {
		t.Errorf("usage %v when idle", u)
	}
	if peak > 1 || peak < 0.5 {
		t.Errorf("usage peak %v over %d reads, want in [0.5, 1]", peak, reads)
	}
	if h := fams["vllm:request_prefill_time_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 4 {
		t.Errorf("prefill histogram counted %d requests", h.GetSampleCount())
	}
	res := doStream(t, t.Context(), s, "/chat/completions", chatBody("hello", 200, nil))
	if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "KV-cache blocks") {
		t.Errorf("a request larger than the cache: %d %s", res.status, res.body)
	}
	t.Logf("%d preemptions; usage peak %.3f over %d reads", preempted, peak, reads)
}

// TestKVCacheUnbounded: without kv_cache_blocks there is no usage gauge
// (the simulator has no KV model to report) and no request is preempted.
func TestKVCacheUnbounded(t *testing.T) {
	s := startSim(t, FastConfig())
	doStream(t, t.Context(), s, "/chat/completions", chatBody("hello", 4, nil))
	fams := scrape(t, s)
	if _, ok := fams["vllm:kv_cache_usage_perc"]; ok {
		t.Error("a usage gauge without a bounded cache")
	}
	if v := fams["vllm:num_preemptions_total"].GetMetric()[0].GetCounter().GetValue(); v != 0 {
		t.Errorf("%v preemptions", v)
	}
}
