package scenario

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkLoadQuickstart measures loading, validating and compiling a small
// plan: the cost "runner validate" and every run pay before any traffic.
func BenchmarkLoadQuickstart(b *testing.B) {
	data, err := os.ReadFile("../plans/quickstart.yaml")
	if err != nil {
		b.Fatal(err)
	}
	opts := env()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBytes("quickstart.yaml", data, "../plans", opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadJSONL measures reading a 10,000-line JSONL prompt file.
func BenchmarkLoadJSONL(b *testing.B) {
	dir := b.TempDir()
	line := []byte(`{"prompt": "Summarise the history of the printing press in three sentences, please."}` + "\n")
	var buf []byte
	for range 10_000 {
		buf = append(buf, line...)
	}
	if err := os.WriteFile(dir+"/p.jsonl", buf, 0o644); err != nil {
		b.Fatal(err)
	}
	plan := []byte(strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}", "  p: {file: p.jsonl}", 1))
	opts := env()
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := LoadBytes("plan.yaml", plan, dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(p.PromptSet("p").Loaded); n != 10_000 {
			b.Fatalf("%d prompts", n)
		}
	}
}
