package protocol

import (
	"encoding/json"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchText is a prompt of about n tokens of plain words, as a synthetic
// prompt is (a nonce tag, then filler).
func benchText(n int) string {
	words := []string{"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog,", "then"}
	var b strings.Builder
	b.WriteString("[nonce-3f9a1c] ")
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	return b.String()
}

// processCPU is the process's user and system CPU time so far: with the
// garbage collector's background workers and the scheduler, a body's whole
// cost, where ns/op is only the benchmark goroutine's wall time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// levelSize is how many bodies a burst encodes at once: a level of 16,384
// streams, each worker a fresh goroutine.
const levelSize = 16384

// benchModes run body n times: same on the benchmark's goroutine; fresh on
// a new goroutine each, one at a time (each pays its stack's growth);
// burst on levelSize new goroutines at once, as at a level's start.
var benchModes = []struct {
	name string
	run  func(b *testing.B, body func())
}{
	{"same", func(b *testing.B, body func()) {
		for range b.N {
			body()
		}
	}},
	{"fresh", func(b *testing.B, body func()) {
		done := make(chan struct{})
		for range b.N {
			go func() {
				body()
				done <- struct{}{}
			}()
			<-done
		}
	}},
	{"burst", func(b *testing.B, body func()) {
		var wg sync.WaitGroup
		for i := 0; i < b.N; i += levelSize {
			for range min(levelSize, b.N-i) {
				wg.Go(body)
			}
			wg.Wait()
		}
	}},
}

// BenchmarkBodyEncode is one chat body built and encoded, by json.Marshal
// (what Encode did before) and by marshalBody, for a short and a long
// prompt, in each of benchModes; cpu-ns/op is the process's CPU per body.
// goroutine/* is a mode's own cost with an empty body, to subtract.
func BenchmarkBodyEncode(b *testing.B) {
	measure := func(name string, run func(*testing.B, func()), body func()) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU(b)
			b.ResetTimer()
			run(b, body)
			b.StopTimer()
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
	for _, m := range benchModes {
		measure("goroutine/"+m.name, m.run, func() {})
	}
	encoders := []struct {
		name string
		enc  func(map[string]any) ([]byte, error)
	}{
		{"json", func(m map[string]any) ([]byte, error) { return json.Marshal(m) }},
		{"fast", marshalBody},
	}
	for _, size := range []struct {
		name   string
		tokens int
	}{{"8tok", 8}, {"2000tok", 2000}} {
		r := Request{Model: "Qwen/Qwen3-0.6B", MaxTokens: 256, Temperature: 0.7, Pinned: true, Text: benchText(size.tokens)}
		for _, e := range encoders {
			body := func() {
				if _, err := e.enc(chat{}.body(&r)); err != nil {
					b.Error(err)
				}
			}
			for _, m := range benchModes {
				measure(size.name+"/"+e.name+"/"+m.name, m.run, body)
			}
		}
	}
}
