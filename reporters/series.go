package reporters

import (
	"math"
	"strconv"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// A series level (a stage's series:) is one level whose load changes over
// its window; its slices, each with the load its series asked for beside
// what it gave, are a sweep without restarts. The terminal and Markdown
// show them as one: a row per slice, under the stage's table, with the
// server's requests running and waiting per slice when telemetry read them.

// seriesGrid is the slices of series point p as a table: the slice's
// time, the load asked for, what was sent and held, and the latencies;
// nil when p is no series level or has no slices.
func seriesGrid(p *result.Point) (title string, headers []string, rows [][]string) {
	if p.Series == nil || p.Slices == nil || len(p.Slices.Windows) == 0 {
		return "", nil, nil
	}
	unit := "streams"
	if p.Series.Over == result.LoadRate {
		unit = "req/s"
	}
	title = p.Label() + " over time, slice by slice (the load its series asked for beside what it gave)"
	headers = []string{"Slice (s)", "Load (" + unit + ")", "Sent", "In flight", "Out tok/s", "TTFT p50 (ms)", "TTFT p95 (ms)", "E2E p50 (ms)"}
	// The server's own state over the same slices, when telemetry read it.
	var state []string
	for _, name := range []string{aggregate.SeriesRunning, aggregate.SeriesWaiting} {
		for k := range p.Slices.Windows {
			if _, ok := p.Slices.Windows[k].Series[name]; ok {
				state = append(state, name)
				headers = append(headers, name)
				break
			}
		}
	}
	num := func(v float64, dec int) string { return strconv.FormatFloat(v, 'f', dec, 64) }
	// A slice's bounds to a tenth of a second: the last, partial one (the
	// requests in flight when the series ended) ends between whole ones.
	secs := func(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
	ptr := func(v *float64) string {
		if v == nil {
			return nullCell
		}
		return num(*v, 2)
	}
	for k := range p.Slices.Windows {
		w := &p.Slices.Windows[k]
		row := []string{
			secs(w.StartS) + "–" + secs(w.EndS), ptr(w.Load), strconv.Itoa(w.Sent), num(w.InFlightMean, 2),
			num(w.OutputTPS, 2), ptr(w.TTFTP50Ms), ptr(w.TTFTP95Ms), ptr(w.E2EP50Ms),
		}
		for _, name := range state {
			cell := nullCell
			if v, ok := w.Series[name]; ok {
				cell = num(v, 2)
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	return title, headers, rows
}
