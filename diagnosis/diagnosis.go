// Package diagnosis reads a sweep's points together: where its knee is (the
// highest load up to which per-user speed and latency hold within a factor
// of the lightest load's), where output throughput stops growing
// (saturation), and what limits the server at the knee and above it. A
// cause is named only when its evidence clears the rule stated here and in
// docs/diagnosis.md; anything else is "not determined", never a guess.
//
// It is a pure function of the stage's points, which are a pure function of
// the records and the telemetry reads, so `runner report DIR` reaches the
// same diagnosis as the run did.
package diagnosis

import (
	"cmp"
	"slices"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// The rules' thresholds, said once (docs/diagnosis.md explains each).
const (
	// Factor bounds the knee: a level is inside it while its TTFT p95 (E2E
	// p95 for an API without output) and ITL p50 have not grown past Factor
	// times the lightest load's (grew) and its per-user speed is at least
	// the lightest's over Factor.
	Factor = 2.0
	// ErrorRise is the rise of the error rate over the lightest load's that
	// takes a level out of the knee, and names failures as a cause, when it
	// is beyond chance too (errorsRose); an error rate at least this high at
	// every level, and beyond chance over them all, is a failure throughout.
	ErrorRise = 0.05
	// PlateauShare and PlateauSpan place saturation: the lowest level whose
	// throughput reaches PlateauShare of the sweep's peak, provided the
	// sweep went on to PlateauSpan times its load (so throughput was seen
	// not to grow by more than about 11% over half as much load again).
	PlateauShare = 0.90
	PlateauSpan  = 1.5
	// ITLGrowth is how much ITL p50 must grow over the lightest load's (and
	// by at least ITLNoiseMs) to call the server decode-bound; ITL "holds"
	// while it is within ITLHold times the lightest's, or ITLNoiseMs of it
	// (a sub-millisecond change is the client's timing, not the server's).
	ITLGrowth  = 1.5
	ITLHold    = 1.25
	ITLNoiseMs = 0.5
	// StepGaps is how many of a level's own inter-token gaps its TTFT may
	// grow by over the lightest load's without counting as grown (grew).
	StepGaps = 3.0
	// WaitingMin is the waiting-gauge p95 at which requests count as
	// queued.
	WaitingMin = 1.0
	// SimStretch is how far the built-in simulator's own lateness must have
	// stretched a level's time to first token or decode (its sim_behind
	// account) for the level to count as set by the host, not the model:
	// as far as Growth reaches.
	SimStretch = Growth - 1
	// KVRoomMin is the least free share of the KV cache that counts as
	// room; the KV cache is full when its free share (1 − usage max) is
	// below one request's share or KVRoomMin, whichever is larger.
	KVRoomMin = 0.05
)

// level is one load of the sweep: its points' figures by metric name (the
// mean over a search's probes at the same load).
type level struct {
	label string
	load  float64
	v     map[string]float64
	errs  map[string]int
	// client: the measuring host may have set the pace (the runner's own
	// signals, or the built-in simulator behind its model); runner: the
	// runner's own signals did; sim: the simulator was behind; clientBy
	// names the signals.
	client, runner, sim bool
	clientBy            []string
}

// get is the level's value of metric, and whether it has one.
func (l *level) get(metric string) (float64, bool) {
	v, ok := l.v[metric]
	return v, ok
}

// read are the metrics the rules read.
var read = []string{
	"concurrency", "n_requests", "completed", "failed", "error_rate", "max_in_flight",
	"ttft_p95_ms", "e2e_p95_ms", "itl_p50_ms", "tpot_p50_ms", "output_tps_per_stream",
	"output_tps_total", "input_tps_total", "request_tps",
	"server_running_mean", "server_running_max", "server_waiting_p95", "server_waiting_max",
	"kv_cache_usage_max", "server_preemptions", "prefix_cache_hit_rate",
	"server_prefill_mean_ms", "server_queue_mean_ms", "server_ttft_mean_ms",
	aggregate.SignalCPU, aggregate.SignalSched, aggregate.SignalLag,
	"sim_ttft_stretch_max", "sim_decode_stretch_max", "sim_e2e_stretch_max",
}

// simLate names the built-in simulator's stretch maxima that reached
// SimStretch at a sim_behind level: its own lateness could have made that
// much of a latency's growth (a maximum past the histogram's last bound
// counts, as a stretch of 100 times or more).
func simLate(p *result.Point) []string {
	if !p.SimBehind {
		return nil
	}
	var out []string
	for _, s := range []struct {
		name string
		v    *float64
	}{{"sim_ttft_stretch_max", p.SimTTFTStretchMax}, {"sim_decode_stretch_max", p.SimDecodeStretchMax}} {
		if s.v == nil || *s.v >= SimStretch {
			out = append(out, s.name)
		}
	}
	return out
}

// counted are the metrics that count requests: a load probed several
// times counts them all (its error rate is their failed over their sent).
var counted = map[string]bool{"n_requests": true, "completed": true, "failed": true}

// levels gathers the stage's points by load (a level's parts, its turns,
// models and probe requests, and series levels left out),
// lightest first; a load probed several times (a search) has the mean of
// its probes' figures.
func levels(pts []result.Point) []*level {
	byLabel := map[string]*level{}
	sums := map[string]map[string]float64{}
	counts := map[string]map[string]int{}
	var out []*level
	for i := range pts {
		p := &pts[i]
		// A series level's load changes over its window: it is no point of
		// a sweep by its one label.
		if p.Part() || p.Series != nil {
			continue
		}
		label := p.LoadLabel()
		l := byLabel[label]
		if l == nil {
			l = &level{label: label, load: float64(p.Concurrency), v: map[string]float64{}, errs: map[string]int{}}
			switch {
			case p.Rate != nil:
				l.load = *p.Rate
			case p.Users > 0:
				l.load = float64(p.Users)
			}
			byLabel[label], sums[label], counts[label] = l, map[string]float64{}, map[string]int{}
			out = append(out, l)
		}
		for _, name := range read {
			m, _ := result.MetricNamed(name)
			if v, ok := m.Value(p); ok {
				sums[label][name] += v
				counts[label][name]++
			}
		}
		for k, n := range p.ErrorsByKind {
			l.errs[k] += n
		}
		by := p.ClientBottleneckBy
		if p.ClientBottleneck && len(by) == 0 {
			by = []string{"client_bottleneck"}
		}
		l.runner = l.runner || p.ClientBottleneck
		late := simLate(p)
		l.sim = l.sim || len(late) > 0
		by = append(slices.Clone(by), late...)
		for _, s := range by {
			l.client = true
			if !slices.Contains(l.clientBy, s) {
				l.clientBy = append(l.clientBy, s)
			}
		}
	}
	for _, l := range out {
		for name, s := range sums[l.label] {
			m, _ := result.MetricNamed(name)
			v := s
			if !counted[name] {
				v /= float64(counts[l.label][name])
			}
			if m.Decimals >= 0 {
				v = result.Round(v, m.Decimals)
			}
			l.v[name] = v
		}
		if n := l.v["n_requests"]; n > 0 {
			l.v["error_rate"] = result.Round(l.v["failed"]/n, 4)
		}
	}
	slices.SortStableFunc(out, func(a, b *level) int { return cmp.Compare(a.load, b.load) })
	return out
}

// diag is one stage's diagnosis in the making.
type diag struct {
	ls     []*level
	base   *level
	output bool // the stage's API streams output tokens
	// lat and itl are the latency metrics the knee reads: TTFT p95 (E2E
	// p95 without a first token) and ITL p50 (TPOT p50 without ITL).
	lat, itl string
	// tput is the throughput saturation reads.
	tput   string
	expect bool // the stage caches prefixes on purpose
	d      *result.Diagnosis
}

// Diagnose is the stage's diagnosis, or nil for a stage of fewer than two
// loads (a single level, a trace replay). expectPrefixHits says the stage
// shares prefixes on purpose (shared prefixes, conversations), so its
// prefix-cache hits are no finding.
func Diagnose(st *result.Stage, expectPrefixHits bool) *result.Diagnosis {
	if st == nil || st.Load == result.LoadTrace {
		return nil
	}
	ls := levels(st.Points)
	if len(ls) < 2 {
		return nil
	}
	g := &diag{ls: ls, base: ls[0], output: st.Mode != "", expect: expectPrefixHits,
		d: &result.Diagnosis{Factor: Factor, Lightest: ls[0].label, Text: []string{}}}
	g.pickMetrics()
	g.knee()
	g.saturation()
	g.findings()
	return g.d
}

// pickMetrics chooses the metrics the knee and saturation read, by what
// the lightest load has.
func (g *diag) pickMetrics() {
	g.lat, g.itl, g.tput = "ttft_p95_ms", "itl_p50_ms", "output_tps_total"
	if _, ok := g.base.get(g.lat); !ok || !g.output {
		g.lat = "e2e_p95_ms"
	}
	if _, ok := g.base.get(g.itl); !ok {
		g.itl = "tpot_p50_ms"
	}
	if !g.output {
		g.itl = ""
		g.tput = "request_tps"
		if _, ok := g.base.get("input_tps_total"); ok {
			g.tput = "input_tps_total"
		}
	}
}

// top is the sweep's highest level.
func (g *diag) top() *level { return g.ls[len(g.ls)-1] }

// ev is the evidence of metric at l (false when l has no value).
func ev(l *level, metric string) (result.Evidence, bool) {
	v, ok := l.get(metric)
	return result.Evidence{Metric: metric, Level: l.label, Value: v}, ok
}

// evidence appends, for each level, each metric it has.
func evidence(out []result.Evidence, ls []*level, metrics ...string) []result.Evidence {
	for _, m := range metrics {
		for _, l := range ls {
			if e, ok := ev(l, m); ok && !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}
