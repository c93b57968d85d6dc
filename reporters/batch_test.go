package reporters

import (
	"slices"
	"testing"

	"github.com/runnerbench/runner/result"
)

// TestWholeAnswerColumns: a stage of an API answered whole (embeddings,
// rerank) shows requests/s, input tokens/s, inputs per request and E2E, and
// none of a stream's columns; a chat stage keeps its own.
func TestWholeAnswerColumns(t *testing.T) {
	p := result.Point{Concurrency: 1, NRequests: 2, Completed: 2, RequestTPS: 3.5,
		InputTPSTotal: result.Ptr(700.0), MeanInputsPerRequest: result.Ptr(4.0), E2EP50Ms: result.Ptr(9.0)}
	for _, c := range []struct {
		api       string
		want, not []string
	}{
		{"embeddings", []string{"Req/s", "In tok/s", "Inputs/req (texts)", "E2E p50 (ms)", "E2E p99 (ms)"}, []string{"TTFT p50 (ms)", "Out tok/s", "Prefill tok/s"}},
		{"chat", []string{"TTFT p50 (ms)", "Out tok/s", "E2E p95 (ms)"}, []string{"In tok/s", "E2E p50 (ms)"}},
	} {
		g := buildGrid(&result.Stage{Name: "s", API: c.api, Points: []result.Point{p}})
		for _, h := range c.want {
			if !slices.Contains(g.headers, h) {
				t.Errorf("%s: no column %q in %q", c.api, h, g.headers)
			}
		}
		for _, h := range c.not {
			if slices.Contains(g.headers, h) {
				t.Errorf("%s: column %q in %q", c.api, h, g.headers)
			}
		}
	}
}

// TestWholeAnswerTitle: a stage of an API answered whole claims no mode in
// its title (its answer has no length to pin), nor did one in a report of
// an older version, which said pinned; a chat stage names its own.
func TestWholeAnswerTitle(t *testing.T) {
	for _, c := range []struct {
		api, mode, want string
	}{
		{"embeddings", "", "ep · api embeddings · load concurrency"},
		{"score", "pinned", "ep · api score · load concurrency"},
		{"rerank", "", "ep · api rerank · load concurrency"},
		{"chat", "pinned", "ep · mode pinned · api chat · load concurrency"},
		{"messages", "natural", "ep · mode natural · api messages · load concurrency"},
	} {
		st := &result.Stage{Name: "s", API: c.api, Mode: c.mode, Load: result.LoadConcurrency, Endpoint: result.Endpoint{Name: "ep"}}
		if got := stageTitle(st); got != c.want {
			t.Errorf("%s %q: title %q, want %q", c.api, c.mode, got, c.want)
		}
	}
}
