package export

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// label is one label (an attribute in OTLP).
type label struct{ k, v string }

// series is one exported value: a gauge or counter sample, a summary or a
// histogram, with its labels (the level's and its own, e.g. kind).
type series struct {
	name   name
	labels []label
	value  float64
	// summary: quantile values (NaN when not known yet), sum and count.
	qs    []float64
	sum   float64
	count uint64
	// histogram: counts per bucket of bounds (len(bounds)+1), and min and
	// max when minMax is set.
	bounds []float64
	counts []uint64
	minMax bool
	min    float64
	max    float64
}

// batch is what one send carries: series taken at one instant.
type batch struct {
	at     time.Time
	start  time.Time // when the level's counters began (OTLP start time)
	series []series
}

// samples counts the batch's samples as a protocol sends them: one per
// value a receiver stores (a summary's quantiles, sum and count; a
// histogram's buckets, sum and count, in OTLP only).
func (b *batch) samples(to string) int {
	count := promSamples
	if to == OTLP {
		count = otlpSamples
	}
	n := 0
	for i := range b.series {
		n += count(&b.series[i])
	}
	return n
}

// levelLabels are the labels every sample of a level carries.
func levelLabels(base []label, stage, level, endpoint string) []label {
	out := append(slices.Clip(base), label{"stage", stage}, label{"level", level})
	if endpoint != "" {
		out = append(out, label{"endpoint", endpoint})
	}
	return out
}

// runLabels are the run's own labels: the plan's name, the run id and the
// run's labels (sanitised to Prometheus label names; one that would shadow
// Runner's own is given a label_ prefix), sorted.
func runLabels(plan, runID string, extra map[string]string) []label {
	out := []label{{"plan", plan}, {"run_id", runID}}
	reserved := map[string]bool{"plan": true, "run_id": true, "stage": true, "level": true, "endpoint": true,
		"kind": true, "quantile": true, "le": true, "job": true, "instance": true}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := labelName(k)
		if reserved[n] || strings.HasPrefix(n, "__") {
			n = "label_" + n
		}
		out = append(out, label{n, extra[k]})
	}
	return out
}

// labelName maps a run label's key to a Prometheus label name: letters,
// digits and _, not starting with a digit.
func labelName(k string) string {
	b := []byte(k)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// pointSeries are a level's final point as series: every numeric metric of
// the catalogue the point has a value for, in base units.
func pointSeries(p *result.Point, labels []label) []series {
	var out []series
	for _, m := range result.Metrics() {
		n, ok := pointNameOf(&m)
		if !ok {
			continue
		}
		switch m.Name {
		case "errors_by_kind":
			kinds := make([]string, 0, len(p.ErrorsByKind))
			for k := range p.ErrorsByKind {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
			for _, k := range kinds {
				out = append(out, series{name: n.name, labels: with(labels, "kind", k), value: float64(p.ErrorsByKind[k])})
			}
			continue
		case "natural_stop", "client_bottleneck", "sim_behind":
			v, _ := m.Raw(p)
			out = append(out, series{name: n.name, labels: labels, value: b2f(v == true)})
			continue
		case "steady": // null (no slices, or too few to judge): no sample
			if v, null := m.Raw(p); !null {
				out = append(out, series{name: n.name, labels: labels, value: b2f(v == true)})
			}
			continue
		}
		v, ok := m.Value(p)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		out = append(out, series{name: n.name, labels: labels, value: v * n.scale})
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// with returns labels and one more, in a new slice.
func with(labels []label, k, v string) []label {
	return append(slices.Clip(labels), label{k, v})
}

// summaryOf is a summary of h (ms values) in seconds.
func summaryOf(n name, labels []label, h *hist.Histogram, sumMs float64) series {
	s := series{name: n, labels: labels, count: uint64(h.Count()), sum: sumMs / 1000}
	for _, q := range quantiles {
		v, ok := h.Quantile(q)
		if !ok {
			v = math.NaN()
		}
		s.qs = append(s.qs, v/1000)
	}
	return s
}

// histoOf is h (ms values) in the semantic conventions' buckets, seconds.
// A bucket of h is counted under the first bound at or above its
// representative value.
func histoOf(n name, labels []label, h *hist.Histogram, sumMs float64, bounds []float64, scale float64) series {
	s := series{name: n, labels: labels, bounds: bounds, counts: make([]uint64, len(bounds)+1), sum: sumMs * scale}
	bars := h.Bars()
	for i, b := range bars {
		v := b.Ms() * scale
		j := sort.SearchFloat64s(bounds, v)
		s.counts[j] += uint64(b.Count)
		s.count += uint64(b.Count)
		if i == 0 {
			s.min, s.minMax = v, true
		}
		s.max = v
	}
	return s
}
