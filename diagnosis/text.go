package diagnosis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// The sentences of the causes. Each states the figures its rule read.

func (g *diag) kvText(l *level) string {
	var said []string
	if u, ok := l.get("kv_cache_usage_max"); ok {
		s := "usage max " + percent(u)
		if sh := g.kvShare(); sh > 0 {
			s += fmt.Sprintf(" leaves less than one request's room (%s at %s)", percent(sh), g.base.label)
		}
		said = append(said, s)
	}
	if p, ok := l.get("server_preemptions"); ok && p > 0 {
		said = append(said, fmt.Sprintf("%s preempted", plural(p, "request")))
	}
	if w, ok := l.get("server_waiting_p95"); ok && w >= WaitingMin {
		said = append(said, "waiting p95 "+num(w))
	}
	if g.errorsRose(l) {
		e, _ := l.get("error_rate")
		said = append(said, fmt.Sprintf("error rate %s (%s)", percent(e), kindsText(l)))
	}
	return fmt.Sprintf("From %s the KV cache is full: %s.", l.label, strings.Join(said, ", "))
}

func (g *diag) failureText(cause string, l *level) string {
	e, _ := l.get("error_rate")
	b, _ := g.base.get("error_rate")
	top := g.top()
	var at string
	if t, ok := top.get("error_rate"); ok && top != l {
		at = fmt.Sprintf(", %s at %s", percent(t), top.label)
	}
	if l == g.base {
		verb := "Requests fail at every load"
		if cause == result.CauseRateLimited {
			verb = "The server turns requests away at every load"
		}
		return fmt.Sprintf("%s: error rate %s at %s, the lightest%s (%s).", verb, percent(e), l.label, at, kindsText(l))
	}
	verb := "requests fail"
	if cause == result.CauseRateLimited {
		verb = "the server turns requests away"
	}
	return fmt.Sprintf("From %s %s: error rate %s against %s at %s%s (%s).",
		l.label, verb, percent(e), percent(b), g.base.label, at, kindsText(l))
}

// kindsText is l's failures by kind, most first: "failures at c=8 by
// kind: http_429 28, http_503 2".
func kindsText(l *level) string {
	var parts []string
	for _, k := range topKinds(l, 3) {
		parts = append(parts, fmt.Sprintf("%s %d", k, l.errs[k]))
	}
	return fmt.Sprintf("failures at %s by kind: %s", l.label, strings.Join(parts, ", "))
}

func (g *diag) batchText(l *level) string {
	top := g.top()
	r, _ := l.get("server_running_max")
	w, _ := l.get("server_waiting_p95")
	waits := "waiting p95 " + num(w) + " at " + l.label
	if wt, ok := top.get("server_waiting_p95"); ok && top != l {
		waits += ", " + num(wt) + " at " + top.label
	}
	return fmt.Sprintf("From %s the batch is full: the server runs at most %s requests and the rest wait (%s); %s grows with the queue (%s) %s: its slots (max_num_seqs or the engine's like) are the limit.",
		l.label, num(r), waits, title(g.lat), g.against(l, g.lat), g.itlClause(l))
}

// itlClause says whether ITL held at l.
func (g *diag) itlClause(l *level) string {
	v, ok := l.get(g.itl)
	if !ok {
		return ""
	}
	b, _ := g.base.get(g.itl)
	switch {
	case g.itlHolds(l) && v <= ITLHold*b:
		return fmt.Sprintf("while %s holds at %s (%s at %s)", title(g.itl), format(g.itl, v), format(g.itl, b), g.base.label)
	case g.itlHolds(l):
		// Grown by a ratio, by less than the noise floor: "holds" would
		// read false beside 0.44 and 0.92 ms.
		return fmt.Sprintf("while %s stays within %g ms of the lightest load's (%s, %s at %s)", title(g.itl), ITLNoiseMs, format(g.itl, v), format(g.itl, b), g.base.label)
	}
	return fmt.Sprintf("and %s is %s (%s at %s)", title(g.itl), format(g.itl, v), format(g.itl, b), g.base.label)
}

func (g *diag) decodeText(l *level) string {
	b, _ := g.base.get(g.itl)
	v, _ := l.get(g.itl)
	s := fmt.Sprintf("%s at %s, %s at %s", format(g.itl, b), g.base.label, format(g.itl, v), l.label)
	if top := g.top(); top != l {
		if t, ok := top.get(g.itl); ok {
			s += fmt.Sprintf(", %s at %s", format(g.itl, t), top.label)
		}
	}
	if rb, ok := g.base.get("server_running_mean"); ok {
		if r, ok := l.get("server_running_mean"); ok {
			s += fmt.Sprintf("; running mean %s against %s", num(r), num(rb))
		}
	}
	return fmt.Sprintf("From %s every token slows as the batch grows (%s %s): the server is decode-bound.", l.label, title(g.itl), s)
}

func (g *diag) prefillText(l *level) string {
	r, _ := l.get("server_running_max")
	w, _ := l.get("server_waiting_p95")
	s := fmt.Sprintf("From %s %s grows with the load (%s) %s, and the batch is at no ceiling (running max %s, waiting p95 %s)",
		l.label, title(g.lat), g.against(l, g.lat), g.itlClause(l), num(r), num(w))
	if c := g.compare(l, []string{"server_ttft_mean_ms", "server_prefill_mean_ms"}); c != "" {
		s += "; " + c
	}
	return s + ": the server is prefill-bound."
}

func (g *diag) undeterminedText(cause string, l *level) string {
	seen := g.compare(l, []string{g.lat, g.itl})
	if cause == result.CauseNoTelemetry {
		return fmt.Sprintf("What limits the server from %s is not determined: %s, and no telemetry read gave the engine's running and waiting gauges to tell a full batch, a full KV cache and a prefill-bound server apart. Runner reads them (vllm:num_requests_running and vllm:num_requests_waiting, SGLang's and llama.cpp's) from the endpoint's /metrics unless the plan's telemetry block sets endpoint: false; for an engine behind a gateway, add a telemetry target on the engine's own /metrics.",
			l.label, seen)
	}
	for _, m := range []string{"server_running_max", "server_waiting_p95", "kv_cache_usage_max"} {
		if v, ok := l.get(m); ok {
			seen += "; " + title(m) + " " + format(m, v)
		}
	}
	return fmt.Sprintf("What limits the server from %s is not determined: no rule's evidence cleared its bar there (%s).", l.label, seen)
}

// clientText names the signals that flagged l, with their values.
func clientText(l *level) string {
	var parts []string
	for _, s := range l.clientBy {
		v, ok := l.get(s)
		switch {
		case strings.HasPrefix(s, "sim_") && !ok:
			parts = append(parts, title(s)+" past its histogram's last bound")
		case strings.HasPrefix(s, "sim_"):
			parts = append(parts, title(s)+" up to "+percent(v))
		case ok:
			parts = append(parts, title(s)+" "+format(s, v))
		default:
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// hostText is the sentence for a level the measuring host may have set the
// pace of: the runner's own signals, or the built-in simulator fallen
// behind its model;
// limit says whether the host is the level's limit ("set the pace") or a
// caveat on it ("flagged itself").
// When the sentence names several levels, the figures are the first's
// (at says so).
func hostText(l *level, limit, at bool, what string) string {
	who := "the built-in simulator fell behind its own timing model"
	if slices.ContainsFunc(l.clientBy, func(s string) bool { return !strings.HasPrefix(s, "sim_") }) {
		who = "the runner flagged itself"
		if limit {
			who = "the runner itself set the pace"
		}
	}
	figures := clientText(l)
	if at {
		figures = "at " + l.label + ": " + figures
	}
	return fmt.Sprintf("%s (%s): %s", who, figures, what)
}

// titles are the metrics' names in sentences.
var titles = map[string]string{
	"ttft_p95_ms": "TTFT p95", "e2e_p95_ms": "E2E p95", "itl_p50_ms": "ITL p50", "tpot_p50_ms": "TPOT p50",
	"output_tps_per_stream": "per-user speed", "error_rate": "error rate",
	"output_tps_total": "Output throughput", "input_tps_total": "Input throughput", "request_tps": "Request throughput",
	"server_running_max": "running max", "server_waiting_p95": "waiting p95", "kv_cache_usage_max": "KV usage max",
	"server_prefill_mean_ms": "server prefill mean", "server_ttft_mean_ms": "server TTFT mean",
	aggregate.SignalCPU: "client CPU", aggregate.SignalSched: "client scheduling latency p90", aggregate.SignalLag: "dispatch lag p99",
	"sim_ttft_stretch_max": "its lateness stretched time to first token", "sim_decode_stretch_max": "its lateness stretched decode",
}

func title(metric string) string {
	if t, ok := titles[metric]; ok {
		return t
	}
	return metric
}

// format prints metric's value v with its unit.
func format(metric string, v float64) string {
	m, _ := result.MetricNamed(metric)
	switch {
	case m.Unit == "ms":
		return result.FormatMs(v)
	case m.Unit == "share":
		return percent(v)
	case m.Unit == "%":
		return num(v) + "%"
	case m.Unit == "tok/s" || m.Unit == "req/s":
		return num(v) + " " + m.Unit
	}
	return num(v)
}

// num prints v with three significant digits, at most two decimals, and
// no trailing zeros: "2.8", "12.3", "344".
func num(v float64) string {
	dp := 2
	switch a := math.Abs(v); {
	case a >= 100:
		dp = 0
	case a >= 10:
		dp = 1
	}
	s := strconv.FormatFloat(v, 'f', dp, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// percent prints a share as a percentage, to a tenth below 10%.
func percent(v float64) string {
	p := 100 * v
	if math.Abs(p) < 10 && p != math.Trunc(p) {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

// ratio prints a ratio: "12.1", "2", "0.44".
func ratio(v float64) string {
	if v < 1 {
		return strconv.FormatFloat(result.Round(v, 2), 'f', -1, 64)
	}
	return strconv.FormatFloat(result.Round(v, 1), 'f', -1, 64)
}

// plural is "1 request", "3 requests".
func plural(n float64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return num(n) + " " + what + "s"
}
