package reporters

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// A series level's slices are printed as a sweep under its stage's table,
// in the terminal and in Markdown: a row per slice with the load its series
// asked for beside what was sent and the latencies; a steady level prints
// none.
func TestSeriesSweepRows(t *testing.T) {
	sr := &result.Series{Over: result.LoadRate, Shape: "linear", Pieces: []result.SeriesPiece{{DurationS: 4, From: 10, To: 30}}}
	f := func(v float64) *float64 { return &v }
	p := result.Point{Rate: f(20), NRequests: 80, Completed: 80, Series: sr, Slices: &result.Slices{WidthS: 2, Windows: []result.Slice{
		{StartS: 0, EndS: 2, Load: f(15), Sent: 30, InFlightMean: 1.5, TTFTP50Ms: f(12.5)},
		{StartS: 2, EndS: 4, Load: f(25), Sent: 50, InFlightMean: 4.25, TTFTP50Ms: f(80), Series: map[string]float64{aggregate.SeriesWaiting: 3.5}},
		{StartS: 4, EndS: 4.23, Load: f(0), InFlightMean: 2.5, Partial: true},
	}}}
	steady := result.Point{Concurrency: 4, NRequests: 8, Completed: 8, Slices: &result.Slices{WidthS: 1, Windows: []result.Slice{{EndS: 1, Sent: 8}}}}
	r := &result.Report{Stages: []result.Stage{{Name: "ramp", API: "chat", Mode: "pinned", Load: result.LoadRate, Points: []result.Point{p, steady}}}}
	var term, md bytes.Buffer
	if err := WriteTable(&term, r, TableOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": term.String(), "markdown": md.String()} {
		if !strings.Contains(out, "rate=linear(10,30,4s) over time") {
			t.Errorf("%s: no sweep of the series level:\n%s", name, out)
		}
		if !strings.Contains(out, aggregate.SeriesWaiting) || strings.Contains(out, aggregate.SeriesRunning) {
			t.Errorf("%s: the server state column is not the one telemetry read", name)
		}
		for _, row := range [][]string{{"0–2", "15.00", "30", "1.50", "12.50"}, {"2–4", "25.00", "50", "4.25", "80.00", "3.50"}, {"4–4.2", "0.00", "2.50"}} {
			line := lineWith(out, row[0])
			for _, cell := range row {
				if !strings.Contains(line, cell) {
					t.Errorf("%s: slice %s's row %q lacks %s", name, row[0], line, cell)
				}
			}
		}
		if strings.Contains(out, "c=4 over time") {
			t.Errorf("%s: a steady level printed as a sweep", name)
		}
	}
}

// lineWith is the first line of s that contains sub ("" when none).
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
