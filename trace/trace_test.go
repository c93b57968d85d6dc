package trace

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var opts = Options{BlockTokens: 4, MaxTokens: 1000, Level: -1}

// problems collects a parser's complaints as "line: message".
type problems []string

func (p *problems) bad(line int, msg string) { *p = append(*p, fmt.Sprintf("%d: %s", line, msg)) }

func TestParseMooncake(t *testing.T) {
	data := `{"timestamp": 20, "input_length": 8, "output_length": 3, "hash_ids": [1, 2]}
{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1, 9], "extra": "ignored"}

{"timestamp": 20, "input_length": 3, "output_length": 1}
{"timestamp": 7.5, "input_length": 4, "output_length": 1, "hash_ids": [18446744073709551615]}`
	var p problems
	reqs := ParseMooncake([]byte(data), opts, p.bad)
	if len(p) != 0 {
		t.Fatalf("problems: %q", p)
	}
	// Sorted by arrival; the two at 20 ms keep the file's order.
	var got []string
	for _, r := range reqs {
		got = append(got, fmt.Sprintf("%v in=%d out=%d blocks=%v line=%d prompt=%d", r.At, r.Input, r.Output, r.Blocks, r.Line, r.Prompt))
	}
	want := []string{
		"0s in=5 out=2 blocks=[1 9] line=2 prompt=-1",
		"7.5ms in=4 out=1 blocks=[-1] line=5 prompt=-1",
		"20ms in=8 out=3 blocks=[1 2] line=1 prompt=-1",
		"20ms in=3 out=1 blocks=[] line=4 prompt=-1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseMooncakeErrors(t *testing.T) {
	data := `{"timestamp": 1, "input_length": 8, "output_length": 3, "hash_ids": [1]}
{"timestamp": -1, "input_length": 8, "output_length": 3}
{"input_length": 8, "output_length": 3}
{"timestamp": 1, "input_length": 8.5, "output_length": 3}
{"timestamp": 1, "input_length": 8, "output_length": 0}
{"timestamp": 1, "input_length": 2000, "output_length": 1}
{"timestamp": 1, "input_length": 4, "output_length": 1, "hash_ids": [1.5]}
{"timestamp": 1, "input_length": 4, "output_length": 1, "hash_ids": "x"}
{"timestamp": 1,
[1, 2]
{"timestamp": "soon", "input_length": 8, "output_length": 3}`
	var p problems
	if reqs := ParseMooncake([]byte(data), opts, p.bad); len(reqs) != 0 {
		t.Errorf("%d requests from bad lines", len(reqs))
	}
	want := []string{
		`1: input_length 8 takes 2 blocks of 4 tokens, but hash_ids has 1: is block_tokens right?`,
		`2: "timestamp" must be a number of ms, not negative, got -1`,
		`3: missing "timestamp" (ms from the trace's start)`,
		`4: "input_length" must be a whole number of tokens between 1 and 1000, got 8.5`,
		`5: "output_length" must be a whole number of tokens between 1 and 1000, got 0`,
		`6: "input_length" must be a whole number of tokens between 1 and 1000, got 2000`,
		`7: hash_ids[0] must be a whole number, got 1.5`,
		`8: not a valid JSON object: "hash_ids" cannot be a string`,
		`9: not a valid JSON object: unexpected end of JSON input (at byte 16)`,
		`10: not a valid JSON object: a line holds one JSON object, not an array`,
		`11: "timestamp" must be a number of ms, not negative, got a string`,
	}
	if strings.Join(p, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(p, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseAzure(t *testing.T) {
	data := "\xef\xbb\xbfTIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:15:47.0000000,100,10\n" +
		"2023-11-16 18:15:46.5000000,200,20\n" +
		"2023-11-16T18:15:48Z,300,30\n"
	var p problems
	reqs := ParseAzure([]byte(data), opts, p.bad)
	if len(p) != 0 {
		t.Fatalf("problems: %q", p)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, fmt.Sprintf("%v %d %d line %d", r.At, r.Input, r.Output, r.Line))
	}
	if want := "0s 200 20 line 3|500ms 100 10 line 2|1.5s 300 30 line 4"; strings.Join(got, "|") != want {
		t.Fatalf("got %s, want %s", strings.Join(got, "|"), want)
	}
	for _, c := range []struct{ data, want string }{
		{"time,ContextTokens,GeneratedTokens\n", "1: no TIMESTAMP column in the header (an Azure trace has TIMESTAMP, ContextTokens and GeneratedTokens)"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", `2: TIMESTAMP is not a time such as 2023-11-16 18:15:46.6805900`},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,sk-secret\n", `2: "GeneratedTokens" must be a whole number of tokens between 1 and 1000, got text that is not a number`},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,\"1,1\n", "2: invalid CSV: parse error on line 2, column 26: extraneous or missing \" in quoted-field"},
	} {
		var p problems
		ParseAzure([]byte(c.data), opts, p.bad)
		if len(p) != 1 || p[0] != c.want {
			t.Errorf("%q: got %q, want %q", c.data, p, c.want)
		}
	}
}

func TestParseRunner(t *testing.T) {
	rec := func(stage string, level, seq int, warm bool, startMs, lagMs float64, in, maxTok int, prompt string) string {
		start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(startMs * float64(time.Millisecond)))
		return fmt.Sprintf(`{"stage":%q,"level":%d,"seq":%d,"warmup":%v,"nonce":"n","start":%q,"dispatch_lag_ms":%g,"ok":true,"input_tokens":%d,"max_tokens":%d,"output_tokens":%d%s,"ttft_ms":1,"e2e_ms":2,"tpot_ms":null,"chunks":1,"usage_reported":true}`,
			stage, level, seq, warm, start.Format(time.RFC3339Nano), lagMs, in, maxTok, maxTok, prompt)
	}
	lines := []string{
		rec("a", 0, 0, true, 0, 0, 9, 9, ""),                 // a warm-up: skipped
		rec("a", 0, 1, false, 103, 3, 50, 16, `,"prompt":2`), // due at 100
		rec("a", 0, 0, false, 50.5, 0.5, 40, 8, ""),          // due at 50: the first
		rec("a", 0, 2, false, 150, 0, 0, 0, ""),              // failed: no lengths
		rec("b", 1, 0, false, 500, 0, 70, 4, ""),
	}
	data := strings.Join(lines, "\n") + "\n" + `{"stage":"a","lev` // cut by kill -9
	var p problems
	_, problem := ParseRunner([]byte(data), opts, p.bad)
	if len(p) != 0 || !strings.Contains(problem, `2 levels: stage "a" level 0 (3 requests), stage "b" level 1 (1 requests): choose one with stage and level`) {
		t.Fatalf("ambiguous: %q, %q", p, problem)
	}
	o := opts
	o.Stage = "a"
	tr, problem := ParseRunner([]byte(data), o, p.bad)
	if len(p) != 0 || problem != "" {
		t.Fatalf("problems %q %q", p, problem)
	}
	var got []string
	for _, r := range tr.Requests {
		got = append(got, fmt.Sprintf("%v %d %d p%d l%d", r.At, r.Input, r.Output, r.Prompt, r.Line))
	}
	if want := "0s 40 8 p-1 l3|50ms 50 16 p2 l2|100ms 45 12 p-1 l4"; strings.Join(got, "|") != want {
		t.Fatalf("got %s, want %s", strings.Join(got, "|"), want)
	}
	if !strings.Contains(tr.Note, "1 of the trace's 3 recorded requests carried no prompt or output length") || !strings.Contains(tr.Note, "45 input and 12 output tokens") {
		t.Errorf("note %q", tr.Note)
	}
	o.Level = 3
	if _, problem := ParseRunner([]byte(data), o, p.bad); problem != `holds no measured request of stage "a" level 3` {
		t.Errorf("empty selection: %q", problem)
	}
	// A malformed line that is not the last is an error.
	if ParseRunner([]byte("{\n"+lines[1]+"\n"), opts, p.bad); len(p) != 1 || !strings.HasPrefix(p[0], "1: not a request record of requests.jsonl") {
		t.Errorf("bad line: %q", p)
	}
}

// TestWindowAndOffsets: the window keeps [start, end), then the first n,
// re-timed to start at 0; offsets divide by the speedup.
func TestWindowAndOffsets(t *testing.T) {
	var reqs []Request
	for i := range 10 {
		reqs = append(reqs, Request{At: time.Duration(i) * time.Second, Input: i + 1})
	}
	w := Window(reqs, 2*time.Second, 7*time.Second, 0)
	if len(w) != 5 || w[0].Input != 3 || w[0].At != 0 || w[4].At != 4*time.Second || reqs[2].At != 2*time.Second {
		t.Fatalf("window: %+v (source %+v)", w, reqs[2])
	}
	if w := Window(reqs, 0, 0, 3); len(w) != 3 || w[2].Input != 3 {
		t.Fatalf("first 3: %+v", w)
	}
	empty := Window(reqs, 20*time.Second, 0, 0)
	if len(empty) != 0 || len(Offsets(empty, 4)) != 0 {
		t.Fatalf("past the end: %+v", empty)
	}
	if got := Offsets(reqs[:3], 4); !slices.Equal(got, []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond}) {
		t.Fatalf("offsets %v", got)
	}
}

// TestImpliedHitRate works a small trace by hand (blocks of 4 tokens).
func TestImpliedHitRate(t *testing.T) {
	reqs := []Request{
		{Input: 8, Blocks: []int64{1, 2}},     // new: 0 of 8
		{Input: 10, Blocks: []int64{1, 2, 3}}, // 1, 2 cached: 8 of 10
		{Input: 6, Blocks: []int64{1, 4}},     // 1 cached: 4 of 6
		{Input: 7, Blocks: []int64{5, 2}},     // 5 is new, so 2 cannot hit: 0 of 7
		{Input: 3, Blocks: []int64{1}},        // its one (short) block: 3 of 3
		{Input: 5},                            // no ids: unique, 0 of 5
	}
	rate, ok := ImpliedHitRate(reqs, 4)
	if want := 15.0 / 39; !ok || math.Abs(rate-want) > 1e-12 {
		t.Fatalf("rate %v ok %v, want %v", rate, ok, want)
	}
	if _, ok := ImpliedHitRate([]Request{{Input: 3}}, 4); ok {
		t.Fatal("a trace without hash ids implies nothing")
	}
}

func TestSummarize(t *testing.T) {
	var reqs []Request
	for i := range 11 {
		// Arrivals 0, 100, ..., 1000 ms: 10 within the first second.
		reqs = append(reqs, Request{At: time.Duration(i) * 100 * time.Millisecond, Input: 10 * (i + 1), Output: 11 - i, Blocks: []int64{0}})
	}
	s := Summarize(reqs, 512, 2)
	got := fmt.Sprintf("%+v %+v %+v %v", s, s.InputTokens, s.OutputTokens, *s.ImpliedPrefixHitRate)
	want := "{File: Format: BlockTokens:512 Speedup:2 StartS:0 EndS:0 TraceRequests:0 Requests:11 SpanS:0.5 MeanRate:20 PeakRate1s:11 " +
		"InputTokens:{Min:10 P50:60 P90:100 P99:110 Max:110 Mean:60} OutputTokens:{Min:1 P50:6 P90:10 P99:11 Max:11 Mean:6} ImpliedPrefixHitRate:"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " 0.9848") { // all but the first's 10 of 660 tokens
		t.Fatalf("got  %s\nwant %s... 0.9848", got, want)
	}
	if s := Summarize(reqs, 512, 1); s.PeakRate1s != 10 || s.MeanRate != 10 {
		t.Fatalf("at speed 1: peak %d mean %v", s.PeakRate1s, s.MeanRate)
	}
	if s := Summarize(reqs[:1], 0, 1); s.SpanS != 0 || s.MeanRate != 0 || s.BlockTokens != 0 || s.ImpliedPrefixHitRate != nil {
		t.Fatalf("one request: %+v", s)
	}
}

// FuzzParse: no input makes a parser panic, and whatever it returns is
// sorted, positive and within the limits.
func FuzzParse(f *testing.F) {
	f.Add(`{"timestamp": 1, "input_length": 8, "output_length": 3, "hash_ids": [1, 2]}`)
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,5,5\n")
	f.Add(`{"stage":"a","level":0,"seq":0,"start":"2026-01-02T03:04:05Z","dispatch_lag_ms":1,"input_tokens":5,"max_tokens":4}`)
	f.Fuzz(func(t *testing.T, data string) {
		var p problems
		check := func(reqs []Request) {
			for i, r := range reqs {
				if r.Input < 1 || r.Output < 1 || r.Input > opts.MaxTokens || r.Output > opts.MaxTokens || r.At < 0 || (i > 0 && r.At < reqs[i-1].At) {
					t.Fatalf("request %d: %+v", i, r)
				}
			}
		}
		check(ParseMooncake([]byte(data), opts, p.bad))
		check(ParseAzure([]byte(data), opts, p.bad))
		tr, _ := ParseRunner([]byte(data), opts, p.bad)
		for _, r := range tr.Requests {
			if r.Input < 1 || r.Output < 1 {
				t.Fatalf("runner request %+v", r)
			}
		}
	})
}
