package reporters

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/result"
)

// A capacity search's outcome, as the terminal table and the Markdown summary
// both show it: one row per target (its capacity, how sure, the bracket and
// what was measured there), a line saying how the search went, and its notes.

// searchAt are the metrics measured at a capacity that the table shows.
var searchAt = []string{"output_tps_total", "ttft_p95_ms", "tpot_p50_ms", "goodput"}

// searchGrid is the search's table: headers and one row per target.
func searchGrid(sr *result.SearchResult) (headers []string, rows [][]string) {
	headers = []string{"Target", "Capacity", "Decision", "Passed at", "Failed at"}
	for _, name := range searchAt {
		headers = append(headers, mustMetric(name).Header()+" at capacity")
	}
	for _, t := range sr.Targets {
		row := []string{t.Name, capacityCell(sr, &t), decisionCell(&t), boundCell(t.Pass), boundCell(t.Fail)}
		for _, name := range searchAt {
			m := mustMetric(name)
			cell := nullCell
			if x, ok := t.AtCapacity[name]; ok {
				if m.Percent() {
					x *= 100
				}
				cell = formatFloat(x, displayDecimals(m))
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	return headers, rows
}

// capacityCell is a target's capacity: the load, "≥ max" when it held at
// max, the null cell when the search decided none.
func capacityCell(sr *result.SearchResult, t *result.SearchTarget) string {
	switch {
	case t.Capacity == nil:
		return nullCell
	case t.Status == result.SearchAboveMax:
		return "≥ " + loadText(sr, *t.Capacity)
	}
	return loadText(sr, *t.Capacity)
}

// loadText names a load: a concurrency, or a rate in requests/s.
func loadText(sr *result.SearchResult, x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if sr.Over == result.LoadRate {
		return s + " req/s"
	}
	return s
}

// decisionCell says what the search concluded and how sure it is.
func decisionCell(t *result.SearchTarget) string {
	sure := "confident"
	if !t.Confident {
		sure = "not confident"
	}
	switch t.Status {
	case result.SearchFound:
		return "found, " + sure
	case result.SearchAboveMax:
		return "holds at max, " + sure
	case result.SearchBelowMin:
		return "fails at min, " + sure
	}
	return "unresolved"
}

// boundCell is a bracket end: its load, the probes there, and whether its
// outcome stayed unclear.
func boundCell(l *result.SearchLoad) string {
	if l == nil {
		return nullCell
	}
	s := l.Label + " (" + plural(len(l.Probes), "probe", "probes") + ")"
	if !l.Confident {
		s = l.Label + " (" + plural(len(l.Probes), "probe", "probes") + ", unclear)"
	}
	return s
}

// searchLine says how the search went: what it varied, its precision, the
// probes and time it used, and why it stopped.
func searchLine(sr *result.SearchResult) string {
	step := strconv.FormatFloat(sr.Step, 'f', -1, 64)
	if sr.Over == result.LoadRate {
		step = strconv.FormatFloat(sr.Step*100, 'f', -1, 64) + "%"
	}
	budget := plural(sr.BudgetProbes, "probe", "probes")
	if sr.BudgetTimeS > 0 {
		budget += ", " + time.Duration(sr.BudgetTimeS*float64(time.Second)).String()
	}
	return fmt.Sprintf("capacity search over %s %s–%s, precision %s: %s, %s s measured; stopped: %s (budget %s)",
		sr.Over, loadText(sr, sr.Min), loadText(sr, sr.Max), step,
		plural(sr.Probes, "probe", "probes"), formatFloat(sr.ProbeTimeS, 1), stopText(sr.Stop), budget)
}

// stopText says why a search stopped, in words.
func stopText(stop string) string {
	switch stop {
	case result.SearchStopDone:
		return "every target decided"
	case result.SearchStopProbeBudget:
		return "the probe budget ran out"
	case result.SearchStopTimeBudget:
		return "the time budget ran out"
	}
	return strings.ReplaceAll(stop, "_", " ")
}

// searchNotes are the targets' notes, each with its target's name.
func searchNotes(sr *result.SearchResult) []string {
	var out []string
	for _, t := range sr.Targets {
		for _, n := range t.Notes {
			out = append(out, t.Name+": "+n)
		}
	}
	return out
}
