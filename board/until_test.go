package board

import (
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// TestUntilRunsGroupTogether: a run whose levels stopped when their checks
// were decided, and whose sweep skipped its last level at saturation,
// groups with a fixed-count run of the same plan and stage: how long a
// level ran is not what the board compares runs by.
func TestUntilRunsGroupTogether(t *testing.T) {
	report := func(stops bool, levels ...int) *result.Report {
		st := result.Stage{Name: "s", Load: result.LoadConcurrency, API: "chat", Mode: "pinned"}
		for _, c := range levels {
			ttft := 10.0 * float64(c)
			p := result.Point{Concurrency: c, InputTokens: 64, OutputTokens: 32, NRequests: 100, Completed: 100,
				OutputTPSTotal: 100 * float64(c), OutputTPSPerStream: 50, TTFTP95Ms: &ttft}
			if stops {
				p.NRequests, p.Completed = 81, 81
				p.Stop = &result.LevelStop{Rule: "decided", Reason: result.StopDecided, Requests: 81, Confidence: 0.95}
			}
			st.Points = append(st.Points, p)
		}
		if stops {
			st.SweepStop = &result.SweepStop{Reason: result.SweepSaturated, Level: "c=4", Shown: "c=8", Skipped: []string{"c=16"}}
		}
		return &result.Report{SchemaVersion: result.SchemaVersion, Plan: result.Plan{Name: "p", Hash: "h"}, StopReason: result.StopCompleted,
			Verdict: result.StatusPass, StartedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Stages: []result.Stage{st}}
	}
	fixed := FromReport(report(false, 1, 4, 8, 16), "fixed")
	until := FromReport(report(true, 1, 4, 8), "until")
	until.Facts.StartedAt = until.Facts.StartedAt.Add(time.Hour)
	b := mustBuild(t, []Run{fixed, until}, Options{})
	if len(b.Groups) != 1 || len(b.Apart) != 0 || len(b.Groups[0].Rows) != 2 {
		t.Fatalf("groups %d, apart %+v, rows %+v", len(b.Groups), b.Apart, b.Groups)
	}
}
