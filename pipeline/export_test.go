package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/export"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

const identicalPlan = `version: 1
name: identical
endpoints:
  sim:
    simulator: {ttft_ms: 3, itl_ms: 1, max_num_seqs: 64}
prompts:
  p: {synthetic: {input_tokens: 32}}
stages:
  - name: closed
    endpoint: sim
    prompts: p
    output_tokens: 24
    concurrency: [1, 8]
    requests: [10, 64]
    seed: 7
  - name: open
    endpoint: sim
    prompts: p
    output_tokens: {min: 4, max: 40}
    rate: [200]
    requests: 60
    seed: 9
`

// runInto runs the plan with its records in dir, exporting as o says (nil:
// not at all), and returns the report.
func runInto(t *testing.T, dir string, o *export.Options) *result.Report {
	t.Helper()
	return runPlanInto(t, dir, []byte(identicalPlan), o)
}

// runPlanInto runs the plan src with its records in dir, exporting as o
// says (nil: not at all), and returns the report.
func runPlanInto(t *testing.T, dir string, src []byte, o *export.Options) *result.Report {
	t.Helper()
	p, err := scenario.LoadBytes("plan.yaml", src, t.TempDir(), scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := records.Create(dir, src)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Plan: p, PlanBytes: src, Records: w, Logger: zerolog.Nop(), Export: o})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// fixed is what a request's record holds that no clock (and no nonce)
// decides: which request it is, what it asked for, and what came back.
type fixed struct {
	Stage, ErrorKind, FinishReason                 string
	Level, Seq, Replicate, MaxTokens, Prompt, Turn int
	Warmup, OK                                     bool
	OutputTokens, Chunks, ReasoningChunks, Shrd    int
}

func fixedRecords(t *testing.T, dir string) []fixed {
	t.Helper()
	var out []fixed
	err := records.EachRequest(dir, func(r *result.Request) error {
		// The nonce is drawn afresh by every run, on purpose (a server's
		// prefix cache must not recognise a rerun), and the prompt's token
		// count moves with how the nonce tokenizes: neither is compared.
		f := fixed{Stage: r.Stage, ErrorKind: r.ErrorKind, FinishReason: r.FinishReason, Level: r.Level, Seq: r.Seq,
			Replicate: r.Replicate, MaxTokens: r.MaxTokens, Prompt: -1, Turn: r.Turn, Warmup: r.Warmup, OK: r.OK,
			OutputTokens: r.OutputTokens, Chunks: r.Chunks, ReasoningChunks: r.ReasoningChunks, Shrd: r.Shard}
		if r.Prompt != nil {
			f.Prompt = *r.Prompt
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Requests are written as they finish: order by identity, not by clock.
	slices.SortFunc(out, func(a, b fixed) int {
		return cmpAll(cmpStr(a.Stage, b.Stage), a.Level-b.Level, boolInt(b.Warmup)-boolInt(a.Warmup), a.Seq-b.Seq, a.Turn-b.Turn)
	})
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpAll(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// countMetrics are the point's figures that count things rather than time
// them: the same for the same plan whatever the clocks did.
func countMetrics(p *result.Point) string {
	return fmt.Sprintf("%s n=%d ok=%d failed=%d in=%d out=%d mean_out=%v errors=%v mismatch=%d",
		p.Label(), p.NRequests, p.Completed, p.Failed, p.InputTokens, p.OutputTokens, deref(p.MeanOutputTokens), p.ErrorsByKind, p.OutputLenMismatch)
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// TestExportLeavesTheMeasurementAlone: a run exporting every 20 ms to a
// receiver that never answers, and to one that takes everything, records
// the same requests (identity, prompts, lengths, outcomes, token and chunk
// counts; not the nonce, drawn afresh by every run) and the same counts per
// level as the same plan without export;
// its report recomputed from its records is the live one, byte for byte; it
// differs from the run without export only in its export account. The
// requests' times are the simulator's and the machine's, different in any
// two runs, export or not, so they are not compared.
func TestExportLeavesTheMeasurementAlone(t *testing.T) {
	stop := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hung.Close()
	defer close(stop)
	taking := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer taking.Close()
	plainDir, exportDir := t.TempDir(), t.TempDir()
	plain := runInto(t, plainDir, nil)
	exported := runInto(t, exportDir, &export.Options{Interval: 20 * time.Millisecond, Targets: []export.Target{
		{To: export.PrometheusRW, URL: hung.URL}, {To: export.OTLP, URL: taking.URL}}})

	a, b := fixedRecords(t, plainDir), fixedRecords(t, exportDir)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("the requests differ with export: %d records without, %d with", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d differs with export:\n%+v\n%+v", i, a[i], b[i])
		}
	}
	for i, st := range plain.Stages {
		for j := range st.Points {
			if x, y := countMetrics(&st.Points[j]), countMetrics(&exported.Stages[i].Points[j]); x != y {
				t.Errorf("stage %s: %s without export, %s with", st.Name, x, y)
			}
		}
	}
	// At a 20 ms interval on a busy machine even the taking receiver may fall
	// behind and drop some: that is the point of the bounded queue.
	if len(exported.Export) != 2 || exported.Export[0].Sent != 0 || exported.Export[0].Dropped == 0 || exported.Export[1].Sent == 0 {
		t.Errorf("export accounts %+v", exported.Export)
	}
	again, err := Recompute(exportDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := json.Marshal(exported)
	y, _ := json.Marshal(again)
	if !bytes.Equal(x, y) {
		t.Errorf("the report recomputed from an exporting run's records differs from its live report")
	}
}
