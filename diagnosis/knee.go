package diagnosis

import (
	"fmt"
	"math"
	"strings"

	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// broken lists the metrics by which l leaves the knee's factor against the
// lightest load: a latency that grew past Factor (grew), per-user speed
// below the lightest's over Factor, or an error rate that rose (errorsRose).
func (g *diag) broken(l *level) []string {
	var by []string
	for _, m := range []string{g.lat, g.itl} {
		if g.grew(l, m, Factor) {
			by = append(by, m)
		}
	}
	if b, ok := g.base.get("output_tps_per_stream"); g.output && ok && b > 0 {
		if v, ok := l.get("output_tps_per_stream"); ok && v < b/Factor {
			by = append(by, "output_tps_per_stream")
		}
	}
	if g.errorsRose(l) {
		by = append(by, "error_rate")
	}
	return by
}

// grew reports whether latency m at l is above factor times the lightest
// load's, and above it by more than the slack: ITLNoiseMs, and for TTFT
// StepGaps of l's own inter-token gaps (a first token under load waits for
// the batch's current step and shares its own step with the batch's
// decode, which is no queue and no limit).
func (g *diag) grew(l *level, m string, factor float64) bool {
	b, okB := g.base.get(m)
	v, ok := l.get(m)
	if m == "" || !okB || !ok || b <= 0 || v <= factor*b {
		return false
	}
	slack := ITLNoiseMs
	if itl, ok := l.get(g.itl); ok && m == "ttft_p95_ms" {
		slack = max(slack, StepGaps*itl)
	}
	return v-b > slack
}

// errorsRose reports whether l's error rate is at least ErrorRise above
// the lightest load's, and above it beyond chance: the lower limit of the
// 95% interval of the difference (Newcombe's hybrid score interval, from
// each level's Wilson interval) is above zero.
func (g *diag) errorsRose(l *level) bool {
	f1, n1 := l.v["failed"], l.v["n_requests"]
	f2, n2 := g.base.v["failed"], g.base.v["n_requests"]
	if n1 <= 0 || n2 <= 0 || f1/n1-f2/n2 < ErrorRise {
		return false
	}
	p1, p2 := f1/n1, f2/n2
	l1, _ := stats.Wilson(f1, n1, 0.95)
	_, u2 := stats.Wilson(f2, n2, 0.95)
	return p1-p2-math.Hypot(p1-l1, u2-p2) > 0
}

// kneeAt is the index of the knee's level: the level before the first that
// leaves the factor and stays out (the level above it leaves it too, or it
// is the highest), len(ls)-1 when none does; that level's broken metrics;
// and the levels below it that left the factor alone, the level above them
// back inside it (one level's excursion, which a busy machine's hiccup
// makes, is not a knee).
func (g *diag) kneeAt() (int, []string, []*level) {
	var once []*level
	for i := 1; i < len(g.ls); i++ {
		by := g.broken(g.ls[i])
		if len(by) == 0 {
			continue
		}
		if i == len(g.ls)-1 || len(g.broken(g.ls[i+1])) > 0 {
			return i - 1, by, once
		}
		once = append(once, g.ls[i])
	}
	return len(g.ls) - 1, nil, once
}

// knee places the knee, with the figures that placed it and its sentence.
func (g *diag) knee() {
	if c, _ := g.base.get("completed"); c == 0 {
		g.d.Text = append(g.d.Text, fmt.Sprintf("Every request at %s, the lightest load, failed: there is no knee to place against it.", g.base.label))
		return
	}
	i, by, once := g.kneeAt()
	k := g.ls[i]
	mark := &result.LevelMark{Level: k.label, Load: k.load}
	g.d.Knee = mark
	var except string
	for _, l := range once {
		mark.Once = append(mark.Once, l.label)
		mark.Evidence = evidence(mark.Evidence, []*level{l}, g.broken(l)...)
	}
	if len(once) > 0 {
		except = fmt.Sprintf(", but for %s, which left it alone (%s; the level above came back within it)",
			strings.Join(mark.Once, ", "), g.compare(once[0], g.broken(once[0])))
	}
	if by == nil {
		mark.Beyond = true
		held := []string{g.lat, g.itl, "output_tps_per_stream"}
		mark.Evidence = evidence(mark.Evidence, []*level{g.base, k}, held...)
		g.d.Text = append(g.d.Text, fmt.Sprintf("No knee within the sweep: up to %s, its highest level, per-user speed and latency stay within %s of %s's (%s)%s.",
			k.label, factorText(), g.base.label, g.compare(k, held), except))
		return
	}
	next := g.ls[i+1]
	mark.Next, mark.By = next.label, by
	mark.Evidence = evidence(mark.Evidence, []*level{g.base, k, next}, by...)
	if i == 0 {
		g.d.Text = append(g.d.Text, fmt.Sprintf("Knee at %s, the lightest load: already at %s latency or per-user speed leave %s of its: %s.",
			k.label, next.label, factorText(), g.compare(next, by)))
		return
	}
	g.d.Text = append(g.d.Text, fmt.Sprintf("Knee at %s: up to it per-user speed and latency stay within %s of %s's%s; at %s they do not: %s.",
		k.label, factorText(), g.base.label, except, next.label, g.compare(next, by)))
}

func factorText() string { return fmt.Sprintf("%g×", Factor) }

// compare says metrics at l against the lightest load's: "TTFT p95 1.70 s,
// 12.1× the 140 ms at c=1", joined with semicolons.
func (g *diag) compare(l *level, metrics []string) string {
	var parts []string
	for _, m := range metrics {
		if s := g.against(l, m); s != "" {
			parts = append(parts, title(m)+" "+s)
		}
	}
	return strings.Join(parts, "; ")
}

// against says metric at l against the lightest load's: "1.70 s, 12.1×
// the 140 ms at c=1"; "" when either has none.
func (g *diag) against(l *level, m string) string {
	v, ok := l.get(m)
	b, okB := g.base.get(m)
	if m == "" || !ok || !okB {
		return ""
	}
	if m == "error_rate" || b <= 0 {
		return fmt.Sprintf("%s against %s at %s", format(m, v), format(m, b), g.base.label)
	}
	return fmt.Sprintf("%s, %s× the %s at %s", format(m, v), ratio(v/b), format(m, b), g.base.label)
}

// saturation places the level where throughput stops growing.
func (g *diag) saturation() {
	peak, at := 0.0, -1
	for i, l := range g.ls {
		if v, ok := l.get(g.tput); ok && v > peak {
			peak, at = v, i
		}
	}
	if at < 0 {
		return
	}
	s := -1
	for i, l := range g.ls {
		if v, ok := l.get(g.tput); ok && v >= PlateauShare*peak {
			s = i
			break
		}
	}
	sl, top, pk := g.ls[s], g.top(), g.ls[at]
	sv, _ := sl.get(g.tput)
	if sl == top {
		g.d.Text = append(g.d.Text, fmt.Sprintf("%s did not stop growing within the sweep: its highest, %s, is at %s, the highest level, and every lower level had less than %.0f%% of it.",
			title(g.tput), format(g.tput, peak), top.label, 100*PlateauShare))
		return
	}
	if top.load < PlateauSpan*sl.load {
		g.d.Text = append(g.d.Text, fmt.Sprintf("%s may stop growing at %s (%s, at least %.0f%% of its peak, %s at %s), but no level went on to %g× that load to show it.",
			title(g.tput), sl.label, format(g.tput, sv), 100*PlateauShare, format(g.tput, peak), pk.label, PlateauSpan))
		return
	}
	g.d.Saturation = &result.LevelMark{Level: sl.label, Load: sl.load,
		Evidence: evidence(nil, []*level{sl, pk, top}, g.tput)}
	rest := "no level went above it"
	if at != s {
		rest = fmt.Sprintf("its peak is %s at %s, %s more", format(g.tput, peak), pk.label, percent(peak/sv-1))
	}
	g.d.Text = append(g.d.Text, fmt.Sprintf("%s stops growing at %s (%s): up to %s (%s× the load) %s.",
		title(g.tput), sl.label, format(g.tput, sv), top.label, ratio(top.load/sl.load), rest))
}
