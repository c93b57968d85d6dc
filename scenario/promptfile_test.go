package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runnerbench/runner/scenario/promptfile"
)

// samplePlan is minimal with a prompt set x of file (as a YAML flow value)
// and a stage of levels sending requests from it.
func samplePlan(file, stage string) string {
	return strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}\n",
		"  p: {synthetic: {input_tokens: 32}}\n  x: "+file+"\n", 1) + "  - {name: x, endpoint: sim, prompts: x, " + stage + "}\n"
}

// writeJSONL writes n prompts "p0", "p1", ... one a line.
func writeJSONL(t *testing.T, path string, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"prompt\": \"p%d\"}\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPromptSample: a prompt set holds what its stages can send, the most
// any level sends, as a seeded sample of the whole file in file order: the
// same seed picks the same prompts, another seed others; a file with fewer
// prompts than that is held whole.
func TestPromptSample(t *testing.T) {
	dir := t.TempDir()
	writeJSONL(t, filepath.Join(dir, "big.jsonl"), 1000)
	load := func(stage string) []Prompt {
		t.Helper()
		p, err := LoadBytes("plan.yaml", []byte(samplePlan("{file: big.jsonl}", stage)), dir, env())
		if err != nil {
			t.Fatal(err)
		}
		return p.PromptSet("x").Loaded
	}
	a := load("concurrency: [1, 4], requests: [10, 50]")
	if len(a) != 50 {
		t.Fatalf("held %d prompts, want the 50 the largest level sends", len(a))
	}
	if !slices.IsSortedFunc(a, func(x, y Prompt) int { return x.Line - y.Line }) || a[len(a)-1].Line <= 50 {
		t.Errorf("not a sample of the whole file in file order: lines %d..%d", a[0].Line, a[len(a)-1].Line)
	}
	for _, p := range a {
		if p.Text != fmt.Sprintf("p%d", p.Line-1) {
			t.Fatalf("line %d holds %q", p.Line, p.Text)
		}
	}
	if b := load("concurrency: [1, 4], requests: [10, 50]"); !slices.Equal(texts(a), texts(b)) {
		t.Error("the same seed sampled other prompts")
	}
	if c := load("concurrency: [1, 4], requests: [10, 50], seed: 2"); slices.Equal(texts(a), texts(c)) {
		t.Error("another seed sampled the same prompts")
	}
	// Conversations of 3 turns take 3 prompts each; by default a level
	// sends its concurrency; a duration-bound one cycles through a bounded set.
	if n := len(load("concurrency: [2, 8]")); n != 8 {
		t.Errorf("default requests: held %d, want 8", n)
	}
	if n := len(load("concurrency: [2], duration: 10s")); n != 1000 {
		t.Errorf("duration-bound: held %d, want the whole file (under %d)", n, UnboundedHeldPrompts)
	}
	whole := load("concurrency: [1], requests: 5000")
	if len(whole) != 1000 || whole[0].Text != "p0" || whole[999].Text != "p999" {
		t.Errorf("a file smaller than the need: held %d, first %q", len(whole), whole[0].Text)
	}
}

func texts(ps []Prompt) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Text
	}
	return out
}

// TestPromptSampleTurns: a multi-turn stage needs its conversations times
// their turns.
func TestPromptSampleTurns(t *testing.T) {
	dir := t.TempDir()
	writeJSONL(t, filepath.Join(dir, "big.jsonl"), 100)
	p, err := LoadBytes("plan.yaml", []byte(samplePlan("{file: big.jsonl, turns: 3}", "concurrency: [2], requests: 4")), dir, env())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.PromptSet("x").Loaded); n != 12 {
		t.Errorf("held %d prompts, want 4 conversations × 3 turns", n)
	}
}

// TestShareGPTStream: a ShareGPT list is read one conversation at a time;
// an entry of the wrong shape is reported with its number and line and the
// rest still read; broken JSON ends the file at its line.
func TestShareGPTStream(t *testing.T) {
	dir := t.TempDir()
	body := `[
  {"conversations": [{"from": "human", "value": "one"}]},
  {"conversations": "not a list"},
  {
    "id": "x",
    "conversations": [{"from": "gpt", "value": "hi"}, {"from": "human", "value": "three"}]
  },
  {"conversations": [{"from": "human", "value": 7}]},
  {"conversations": [{"from": "human", "value": "five"}]}
]`
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadBytes("plan.yaml", []byte(samplePlan("{file: s.json}", "concurrency: [1], requests: 8")), dir, env())
	f := filepath.Join(dir, "s.json")
	want := f + ":3: entry 2: not a ShareGPT conversation: json: cannot unmarshal string into Go struct field shareGPTRecord.conversations of type []struct { From string \"json:\\\"from\\\"\"; Value string \"json:\\\"value\\\"\" }\n" +
		f + ":8: entry 4: not a ShareGPT conversation: json: cannot unmarshal number into Go struct field .conversations.value of type string"
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	if err := os.WriteFile(f, []byte(strings.Replace(body, `"value": 7`, `"value": "four"`, 1)[:len(body)-60]+"\n  {\"conversations\": [}\n]"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadBytes("plan.yaml", []byte(samplePlan("{file: s.json}", "concurrency: [1], requests: 8")), dir, env())
	if err == nil || !strings.Contains(err.Error(), ":3: entry 2: not a ShareGPT") || !strings.Contains(err.Error(), "not valid ShareGPT JSON") {
		t.Fatalf("got %v", err)
	}
}

// TestPromptEntryTooLarge: a line longer than promptfile.MaxEntryBytes is
// reported at its line without being held; a file's size is no limit.
func TestPromptEntryTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 64 MiB line")
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "big.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"prompt\": \"ok\"}\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(17 + promptfile.MaxEntryBytes + 1); err != nil { // a sparse line of zero bytes
		t.Fatal(err)
	}
	f.Close()
	_, err = LoadBytes("plan.yaml", []byte(samplePlan("{file: big.jsonl}", "concurrency: [1]")), dir, env())
	if err == nil || !strings.Contains(err.Error(), "big.jsonl:2: line is longer than 64 MiB") {
		t.Errorf("got %v", err)
	}
}
