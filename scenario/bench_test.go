package scenario

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	plan := []byte(strings.Replace(strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}", "  p: {file: p.jsonl}", 1),
		"concurrency: [1]\n", "concurrency: [1]\n    requests: 10000\n", 1))
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

// BenchmarkLoadShareGPT1GiB loads a 1 GiB ShareGPT file (generated into a
// temporary directory: about 600,000 conversations of a few turns each,
// pretty-printed as the real dump is) for a plan whose largest level sends
// 1,024 requests, and reports the peak resident memory of the load alone
// (VmHWM, reset after the file is written). It fails above 200 MiB: the
// loader must hold what the plan sends, not the file. Run it with
//
//	go test ./scenario -run '^$' -bench LoadShareGPT1GiB -benchtime 1x
func BenchmarkLoadShareGPT1GiB(b *testing.B) {
	dir := b.TempDir()
	size := writeShareGPT(b, filepath.Join(dir, "sharegpt.json"), 1<<30)
	plan := []byte(strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}", "  p: {file: sharegpt.json}", 1) +
		"  - {name: sweep, endpoint: sim, prompts: p, concurrency: [1, 16, 64], requests: [64, 256, 1024]}\n")
	opts := env()
	b.SetBytes(size)
	var peak float64
	for b.Loop() {
		runtime.GC()
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			b.Skipf("cannot reset the peak RSS: %v", err)
		}
		p, err := LoadBytes("plan.yaml", plan, dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(p.PromptSet("p").Loaded); n != 1024 {
			b.Fatalf("held %d prompts, want 1024", n)
		}
		peak = max(peak, peakRSSMiB(b))
	}
	b.ReportMetric(peak, "peak-RSS-MiB")
	if peak >= 200 {
		b.Errorf("peak RSS %.0f MiB loading a %d MiB prompt file, want well under 200", peak, size>>20)
	}
}

// writeShareGPT writes a ShareGPT-shaped JSON list of about size bytes and
// returns its size.
func writeShareGPT(b *testing.B, path string, size int64) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	words := strings.Fields("the quick brown fox jumps over a lazy dog while distant thunder rolls across open water")
	text := func(i, n int) string {
		var s strings.Builder
		for j := range n {
			if j > 0 {
				s.WriteByte(' ')
			}
			s.WriteString(words[(i*7+j)%len(words)])
		}
		return s.String()
	}
	w.WriteString("[\n")
	var written int64
	for i := 0; written < size; i++ {
		if i > 0 {
			w.WriteString(",\n")
		}
		human, _ := json.Marshal(text(i, 20+i%200))
		gpt, _ := json.Marshal(text(i+1, 100+i%400))
		n, _ := fmt.Fprintf(w, "  {\n    \"id\": \"conv-%d\",\n    \"conversations\": [\n      {\"from\": \"human\", \"value\": %s},\n      {\"from\": \"gpt\", \"value\": %s}\n    ]\n  }", i, human, gpt)
		written += int64(n)
	}
	w.WriteString("\n]\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}

// peakRSSMiB is the process's peak resident set since the last reset (VmHWM).
func peakRSSMiB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	b.Skip("no VmHWM in /proc/self/status")
	return 0
}
