package protocol

import (
	"encoding/json"
	"strings"
	"testing"
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

// BenchmarkBodyEncode is one chat body built and encoded, by json.Marshal
// (what Encode did before) and by marshalBody, for a short and a long
// prompt; fresh runs each body on a goroutine of its own, as a level's
// start does (each worker's first body grows its stack), same on the
// benchmark's goroutine. goroutine/fresh is the fresh goroutine's own cost
// (start, hand-off, exit), to subtract from the fresh figures.
func BenchmarkBodyEncode(b *testing.B) {
	b.Run("goroutine/fresh", func(b *testing.B) {
		b.ReportAllocs()
		done := make(chan struct{})
		for b.Loop() {
			go func() { done <- struct{}{} }()
			<-done
		}
	})
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
			encode := func() {
				if _, err := e.enc(chat{}.body(&r)); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(size.name+"/"+e.name+"/same", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					encode()
				}
			})
			b.Run(size.name+"/"+e.name+"/fresh", func(b *testing.B) {
				b.ReportAllocs()
				done := make(chan struct{})
				for b.Loop() {
					go func() {
						encode()
						done <- struct{}{}
					}()
					<-done
				}
			})
		}
	}
}
