package board

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/result"
)

// fullBatchReport is a report of a sweep against 4 batch slots: from c=8
// requests wait and TTFT grows with the queue, throughput flat from c=4.
// withDiagnosis gives it its diagnosis, as a run writes it; without, the
// board computes it from the points (a run read back from a database
// published before the diagnosis existed).
func fullBatchReport(start int, withDiagnosis bool) *result.Report {
	st := result.Stage{Name: "s", Mode: "pinned", API: "chat", Load: result.LoadConcurrency}
	for _, l := range []struct{ c, running, waiting, ttft, tput float64 }{
		{1, 1, 0, 100, 90}, {2, 2, 0, 102, 178}, {4, 4, 0, 110, 344}, {8, 4, 4, 900, 350}, {16, 4, 12, 2400, 348},
	} {
		st.Points = append(st.Points, result.Point{Concurrency: int(l.c), NRequests: 100, Completed: 100,
			OutputTPSTotal: l.tput, OutputTPSPerStream: l.tput / l.c, TTFTP95Ms: result.Ptr(l.ttft), ITLP50Ms: result.Ptr(10.0),
			ErrorRate: result.Ptr(0.0), MaxInFlight: result.Ptr(int(l.c)),
			ServerRunningMax: result.Ptr(l.running), ServerWaitingP95: result.Ptr(l.waiting), ServerRunningMean: result.Ptr(l.running)})
	}
	if withDiagnosis {
		st.Diagnosis = diagnosis.Diagnose(&st, false)
	}
	return &result.Report{Plan: result.Plan{Name: "p", Hash: "h"}, RunnerVersion: "v1", StopReason: result.StopCompleted, Verdict: "pass",
		StartedAt: time.Date(2026, 12, 1, 0, start, 0, 0, time.UTC), Stages: []result.Stage{st}}
}

// TestDiagnosisColumns: every row shows its run's knee and saturation
// (c=4 and c=4 for a full batch of 4 slots) in the table, Markdown, HTML
// and JSON, and carries the cause; a run whose report has no diagnosis gets
// the one its points give.
func TestDiagnosisColumns(t *testing.T) {
	runs := []Run{FromReport(fullBatchReport(1, true), "with"), FromReport(fullBatchReport(2, false), "without")}
	b := mustBuild(t, runs, Options{})
	for _, r := range b.Groups[0].Rows {
		if r.Knee != "c=4" || r.Saturation != "c=4" || r.Cause != result.CauseBatchFull {
			t.Errorf("%s: knee %q saturation %q cause %q", r.Source, r.Knee, r.Saturation, r.Cause)
		}
	}
	var tb, md, hb, jb bytes.Buffer
	for _, w := range []struct {
		f   func() error
		out *bytes.Buffer
	}{{func() error { return WriteTable(&tb, b, 0) }, &tb}, {func() error { return WriteMarkdown(&md, b) }, &md},
		{func() error { return WriteHTML(&hb, b) }, &hb}, {func() error { return WriteJSON(&jb, b) }, &jb}} {
		if err := w.f(); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(tb.String(), "Knee") || strings.Count(tb.String(), "│ c=4  │ c=4") != 2 {
		t.Errorf("table:\n%s", tb.String())
	}
	if strings.Count(md.String(), "| c=4 | c=4 |") != 2 || !strings.Contains(md.String(), "| knee | saturation |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if strings.Count(hb.String(), `<td class="mono">c=4</td><td class="mono">c=4</td>`) != 2 {
		t.Errorf("html lacks the cells")
	}
	if strings.Count(jb.String(), `"knee": "c=4"`) != 2 || strings.Count(jb.String(), `"cause": "batch_full"`) != 2 {
		t.Errorf("json:\n%s", jb.String())
	}
}
