package board

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/store/synthrun"
)

// reportRun is the board's run of a report of plan p, stage s (closed loop,
// chat, 128 in, 32 out), one level per (total tok/s, TTFT p95 ms), each of
// 8 requests, read as a report.json is (FromReport).
func reportRun(source, labels string, start int, levels ...[2]float64) (*result.Report, Run) {
	st := result.Stage{Name: "s", API: "chat", Mode: "pinned", Load: result.LoadConcurrency,
		Endpoint: result.Endpoint{Name: "e", BaseURL: "http://127.0.0.1:8000/v1", Model: "m"}}
	for i, l := range levels {
		st.Points = append(st.Points, result.Point{Concurrency: 1 << i, InputTokens: 128, OutputTokens: 32, NRequests: 8, Completed: 8,
			OutputTPSTotal: l[0], TTFTP95Ms: result.Ptr(l[1])})
	}
	rep := &result.Report{SchemaVersion: result.SchemaVersion, Plan: result.Plan{Name: "p", Hash: "h"}, RunnerVersion: "v1",
		StartedAt: time.Date(2026, 12, 1, 0, start, 0, 0, time.UTC), Labels: labelsOf(labels), StopReason: result.StopCompleted,
		Verdict: result.StatusPass, Stages: []result.Stage{st}}
	return rep, FromReport(rep, source)
}

// TestFailedRunsAreApart (issue 38, item 8): the fastest run failed a
// check, and another failed every request of a level: neither is ranked,
// with or without a condition; each is listed after the ranking with its
// reason; the best run that passed is first.
func TestFailedRunsAreApart(t *testing.T) {
	rep, _ := reportRun("failed", "engine=fast", 1, [2]float64{900, 100}, [2]float64{2000, 250})
	rep.Verdict = result.StatusFail
	rep.Stages[0].Checks = []result.CheckOutcome{{Name: "no failures", Expr: "failed == 0", Scope: "level", Severity: "fail", LevelLabel: "c=2", Status: result.StatusFail}}
	failed := FromReport(rep, "failed")
	rep, _ = reportRun("broken", "engine=broken", 2, [2]float64{1500, 120}, [2]float64{0, 0})
	rep.Stages[0].Points[1].Completed, rep.Stages[0].Points[1].Failed, rep.Stages[0].Points[1].Error = 0, 8, result.Ptr("http_500: overloaded")
	rep.Verdict = result.StatusFail
	broken := FromReport(rep, "broken")
	_, good := reportRun("good", "engine=good", 3, [2]float64{800, 90}, [2]float64{1200, 280})
	_, slow := reportRun("slow", "engine=slow", 4, [2]float64{400, 150}, [2]float64{700, 290})
	for _, rank := range []string{"", "output_tps_total at ttft_p95_ms < 300"} {
		r, err := ParseRank(rank)
		if err != nil {
			t.Fatal(err)
		}
		g := mustBuild(t, []Run{failed, broken, good, slow}, Options{Rank: r}).Groups[0]
		var got []string
		for _, row := range g.Rows {
			got = append(got, fmt.Sprintf("%d %s", row.Place, row.Name))
		}
		if want := "[1 engine=good 2 engine=slow 0 engine=fast 0 engine=broken]"; fmt.Sprint(got) != want {
			t.Errorf("rank %q: rows %v, want %s", rank, got, want)
		}
		if a := g.Rows[2].Apart; a != "failed its check c=2 / no failures" {
			t.Errorf("the failed run's reason: %q", a)
		}
		if a := g.Rows[3].Apart; a != "every request of c=2 failed (first: http_500: overloaded)" {
			t.Errorf("the broken run's reason: %q", a)
		}
		var md strings.Builder
		if err := WriteMarkdown(&md, &Board{Groups: []Group{g}, Metrics: DefaultMetrics}); err != nil || !strings.Contains(md.String(), "not ranked: failed its check c=2 / no failures") {
			t.Errorf("the Markdown does not say why: %v\n%s", err, md.String())
		}
	}
}

// TestReplicatesCombined (issue 38, item 8): nights of one engine (told
// apart by --replicate-label night) are one row, the mean of their levels,
// with each night's key and their spread; two nights that disagree widely
// (797 and 272 tok/s) are warned about, and their order against the other
// engine is not decided; three close nights against three close nights a
// third slower are decided.
func TestReplicatesCombined(t *testing.T) {
	var runs []Run
	for i, tps := range []float64{790, 797, 805} {
		_, r := reportRun(fmt.Sprint("a", i), fmt.Sprint("engine=a night=", i+1), i, [2]float64{tps, 100})
		runs = append(runs, r)
	}
	for i, tps := range []float64{530, 525, 540} {
		_, r := reportRun(fmt.Sprint("b", i), fmt.Sprint("engine=b night=", i+1), 10+i, [2]float64{tps, 100})
		runs = append(runs, r)
	}
	for i, tps := range []float64{797, 272} {
		_, r := reportRun(fmt.Sprint("c", i), fmt.Sprint("engine=c night=", i+1), 20+i, [2]float64{tps, 100})
		runs = append(runs, r)
	}
	g := mustBuild(t, runs, Options{Replicate: []string{"night"}}).Groups[0]
	if len(g.Rows) != 3 {
		t.Fatalf("%d rows, want one per engine", len(g.Rows))
	}
	a, c, b := g.Rows[0], g.Rows[1], g.Rows[2]
	if a.Name != "engine=a (×3)" || *a.Key != 797.3333333333334 || len(a.Replicates) != 3 || a.Replicates[2].Labels["night"] != "3" || *a.Replicates[2].Key != 805 {
		t.Errorf("engine a: %s key %v replicates %+v", a.Name, *a.Key, a.Replicates)
	}
	if !strings.Contains(a.Note, "3 replicates: output_tps_total 790.00 to 805.00") || strings.Contains(a.Note, "disagree") {
		t.Errorf("engine a's note: %q", a.Note)
	}
	if c.Name != "engine=c (×2)" || !strings.Contains(c.Note, "272.00 to 797.00: they disagree (the highest 193% above the lowest") {
		t.Errorf("engine c: %s %q", c.Name, c.Note)
	}
	if c.VsAbove == nil || c.VsAbove.Verdict != Undecided || b.VsAbove == nil || b.VsAbove.Verdict != Undecided {
		t.Errorf("c's nights disagree: nothing about it is decided: c %+v, b %+v", c.VsAbove, b.VsAbove)
	}
	// Without the disagreeing engine: a over b is decided, by replicates.
	g = mustBuild(t, runs[:6], Options{Replicate: []string{"night"}}).Groups[0]
	if d := g.Rows[1].VsAbove; d == nil || d.Verdict != Decided || d.By != "replicates" || d.Interval == nil || d.Interval.Hi >= 0 {
		t.Errorf("b a third slower than a, three nights each: %+v", d)
	}
	// Without --replicate-label every night is a row of its own.
	if g := mustBuild(t, runs, Options{}).Groups[0]; len(g.Rows) != 8 {
		t.Errorf("%d rows without --replicate-label", len(g.Rows))
	}
}

// TestGroupsByLoadNotEndpoint (issue 38, item 8): two runs that differ only
// in the endpoint they were sent to (a plan whose base_url --set changed:
// another sha256) are one group, named by their endpoints, without a note
// that the plan changed; another requested length is another group.
func TestGroupsByLoadNotEndpoint(t *testing.T) {
	rep, _ := reportRun("a", "", 1, [2]float64{800, 100})
	rep.Plan.Hash = "h1"
	a := FromReport(rep, "a")
	rep, _ = reportRun("b", "", 2, [2]float64{500, 100})
	rep.Plan.Hash, rep.Stages[0].Endpoint.BaseURL = "h2", "http://127.0.0.1:8081/v1"
	b := FromReport(rep, "b")
	bd := mustBuild(t, []Run{a, b}, Options{})
	if len(bd.Groups) != 1 {
		t.Fatalf("%d groups", len(bd.Groups))
	}
	g := bd.Groups[0]
	if g.Rows[0].Name != "endpoint http://127.0.0.1:8000/v1" || g.Rows[1].Name != "endpoint http://127.0.0.1:8081/v1" {
		t.Errorf("rows named %q, %q", g.Rows[0].Name, g.Rows[1].Name)
	}
	for _, n := range g.Notes {
		if strings.Contains(n, "versions of the plan") {
			t.Errorf("note %q", n)
		}
	}
	rep, _ = reportRun("longer", "", 3, [2]float64{500, 100})
	rep.Stages[0].Points[0].InputTokens = 256
	longer := FromReport(rep, "longer")
	if n := len(mustBuild(t, []Run{a, b, longer}, Options{}).Groups); n != 2 {
		t.Errorf("another input length in the same group: %d groups", n)
	}
}

// TestDecidedByRequests (issue 38, item 8): single runs are judged against
// the run above by their requests at their key levels, as runner compare
// judges them: an engine twice as fast per token is decided; two runs of
// one engine (other seeds) are tied.
func TestDecidedByRequests(t *testing.T) {
	root := t.TempDir()
	if err := synthrun.WriteEngines(root); err != nil {
		t.Fatal(err)
	}
	runs, skips, err := Load([]string{root}, LoadOptions{})
	if err != nil || len(skips) != 0 {
		t.Fatal(err, skips)
	}
	b := mustBuild(t, runs, Options{Samples: DirSamples(runs)})
	g := b.Groups[0]
	if len(g.Rows) != 3 || g.Rows[0].Name != "engine=fast" {
		t.Fatalf("rows %+v", g.Rows)
	}
	d1, d2 := g.Rows[1].VsAbove, g.Rows[2].VsAbove
	if d1 == nil || d1.Verdict != Decided || d1.By != "requests" || d1.Rel == nil || *d1.Rel > -0.3 || d1.Interval == nil || d1.Interval.Hi >= 0 {
		t.Errorf("half the speed: %+v", d1)
	}
	if d2 == nil || d2.Verdict != Tied || d2.Interval == nil || d2.Interval.Lo < -0.05 || d2.Interval.Hi > 0.05 {
		t.Errorf("two runs of one engine, 400 requests each: not tied within ±5%%: %+v", d2)
	}
}
