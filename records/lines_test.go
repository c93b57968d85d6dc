package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

func sampleRequest(seq int) *result.Request {
	return &result.Request{
		Stage: "throughput", Level: 1, Concurrency: 8, Seq: seq, Nonce: "n-" + strconv.Itoa(seq),
		Start:         time.Date(2026, 11, 29, 14, 3, 5, seq*1000, time.UTC),
		DispatchLagMs: 0.12, OK: true, Status: 200,
		TTFTMs: result.Ptr(41.27), E2EMs: 4205.66, TPOTMs: result.Ptr(16.31), MaxITLMs: result.Ptr(22.5),
		InputTokens: 1031, OutputTokens: 256, Chunks: 256, UsageReported: true, FinishReason: "length",
	}
}

// readJSONL parses every line; it fails on any line that is not a complete
// record.
func readJSONL(t *testing.T, path string) []result.Request {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []result.Request
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var r result.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d is not a valid record: %v: %q", n, err, sc.Text())
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestJSONLConcurrentWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", FileRequests)
	w, err := NewJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 250
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := w.Write(sampleRequest(g*each + i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// Records are on disk before Close: a reader (or a crash) sees them now.
	if got := len(readJSONL(t, path)); got != writers*each {
		t.Fatalf("before close: %d records, want %d", got, writers*each)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readJSONL(t, path)
	seen := make(map[int]bool, len(recs))
	for _, r := range recs {
		if seen[r.Seq] {
			t.Fatalf("seq %d written twice", r.Seq)
		}
		seen[r.Seq] = true
		if want := sampleRequest(r.Seq); r.Nonce != want.Nonce || *r.TTFTMs != *want.TTFTMs || !r.Start.Equal(want.Start) {
			t.Fatalf("record %d corrupted: %+v", r.Seq, r)
		}
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct records, want %d", len(seen), writers*each)
	}
}

func TestJSONLAfterClose(t *testing.T) {
	w, err := NewJSONL(filepath.Join(t.TempDir(), FileRequests))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Write(sampleRequest(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := w.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close = %v, want ErrClosed", err)
	}
	if err := w.Write(nil); err == nil {
		t.Error("nil record accepted")
	}
	if _, err := NewJSONL(filepath.Join(t.TempDir(), "new-dir", "x")); err != nil {
		t.Errorf("NewJSONL should create the directory: %v", err)
	}
}

// TestJSONLReplacesSymlink: a requests.jsonl planted as a symbolic link in
// the output directory (a pull request can commit one) is replaced, and the
// file it points to is neither truncated nor written; an existing regular
// file is replaced too, as before.
func TestJSONLReplacesSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.sh")
	if err := os.WriteFile(victim, []byte("echo keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, FileRequests)
	if err := os.Symlink(victim, path); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	w, err := NewJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(sampleRequest(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "echo keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Fatalf("requests.jsonl is not a regular 0644 file: %v %v", st, err)
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 1 {
		t.Errorf("requests.jsonl: %q", b)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

const jsonlChildEnv = "RUNNER_TEST_JSONL_CHILD"

// TestJSONLSurvivesKill runs a child process that writes records and reports
// each returned Write on stdout, kills it with SIGKILL mid-stream, and checks
// the file holds a valid line for every acknowledged record and nothing torn.
func TestJSONLSurvivesKill(t *testing.T) {
	if path := os.Getenv(jsonlChildEnv); path != "" {
		jsonlChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), FileRequests)
	cmd := exec.Command(os.Args[0], "-test.run=^TestJSONLSurvivesKill$")
	cmd.Env = append(os.Environ(), jsonlChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			continue // test framework chatter
		}
		acked = n
		if acked >= 3000 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if acked < 3000 {
		t.Fatalf("child acknowledged only %d records before exiting", acked)
	}
	// SIGKILL can land inside the write(2) of a record that was never
	// acknowledged: Linux copies a write to a regular file page by page and
	// stops at a page boundary when a fatal signal is pending. That leaves at
	// most one unterminated fragment at the very end, which is not a finished
	// record; every newline-terminated line must be a whole, valid record.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i != len(data)-1 {
		t.Logf("dropping an unterminated fragment of %d bytes (a write cut by the kill)", len(data)-i-1)
		if err := os.WriteFile(path, data[:i+1], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs := readJSONL(t, path) // fails on any torn terminated line
	if len(recs) < acked+1 {
		t.Fatalf("file holds %d records, but %d writes had returned before the kill", len(recs), acked+1)
	}
	for i, r := range recs {
		if r.Seq != i {
			t.Fatalf("record %d has seq %d: lost or reordered", i, r.Seq)
		}
	}
}

func jsonlChild(path string) {
	w, err := NewJSONL(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Bounded, so an orphaned child cannot run forever.
	for i := range 1_000_000 {
		if err := w.Write(sampleRequest(i)); err != nil {
			os.Exit(3)
		}
		fmt.Println(i)
	}
	os.Exit(0)
}

// BenchmarkJSONLWriter measures records/s through Write (encode + one
// write(2) each) from parallel goroutines, as the engine's workers call it.
func BenchmarkJSONLWriter(b *testing.B) {
	w, err := NewJSONL(filepath.Join(b.TempDir(), FileRequests))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rec := sampleRequest(7)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.Write(rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
