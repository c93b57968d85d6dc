package aggregate

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/result"
)

// The names of the telemetry series a chart draws over time, with their
// units: the slices' means (sliceTelemetry) and the reads themselves
// (Tracks) are named alike, so a page shows each once.
const (
	SeriesRunning  = "server requests running"
	SeriesWaiting  = "server requests waiting"
	SeriesKVCache  = "KV-cache usage (0–1)"
	SeriesGPUPower = "GPU power (W, all GPUs)"
)

// Bounds on what Tracks draws of a target's other gauges, so a node
// exporter's hundreds of series cannot flood a page: the first
// maxOtherMetrics metric names (sorted), each with its first
// maxOtherLines label sets. What is left is named in Undrawn.
const (
	maxOtherMetrics = 4
	maxOtherLines   = 8
)

// Track is one series of a stage's telemetry reads as a chart draws it:
// the chart it belongs to (Chart: a series name above, or a metric's
// name), its line in that chart (Line: a label set, or empty), the target
// it was read from, and its value at each read with the level being run.
// A failed read is no point: a gap.
type Track struct {
	Stage, Target string
	Endpoint      bool
	Chart, Line   string
	Points        []TrackPoint
}

// TrackPoint is one read's value.
type TrackPoint struct {
	Level int
	T     time.Time
	V     float64
}

// Undrawn names what a target's reads held that Tracks does not draw:
// gauges beyond the bounds, and gauges that held one value in every read
// (a line would say nothing), with that value.
type Undrawn struct {
	Stage, Target string
	Metrics       []string
	Constant      []string
}

// Tracks are the telemetry series of a run's reads (telemetry.jsonl), per
// stage and target, the endpoint first: the engine's requests running and
// waiting and its KV-cache usage where it exposes them (the endpoint's own
// page, or a target that is another replica's), the GPUs' power summed
// over the GPUs a target reports, and, for a telemetry target, its other
// gauges (counters, histograms and info series left out), within the
// bounds above. A sharded run's reads are the lowest shard's, as its
// figures are.
func Tracks(reads []*result.TelemetryScrape) ([]Track, []Undrawn) {
	reads = firstShard(slices.Clone(reads))
	SortReads(reads)
	type key struct {
		stage, target string
		endpoint      bool
	}
	var keys []key
	by := map[key][]*result.TelemetryScrape{}
	stageAt := map[string]int{} // stages in the order they ran
	for _, r := range reads {
		k := key{r.Stage, r.Target, r.Endpoint}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		if _, ok := stageAt[r.Stage]; !ok {
			stageAt[r.Stage] = len(stageAt)
		}
		by[k] = append(by[k], r)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.stage != b.stage {
			return stageAt[a.stage] < stageAt[b.stage]
		}
		return a.endpoint && !b.endpoint || a.endpoint == b.endpoint && a.target < b.target
	})
	var out []Track
	var undrawn []Undrawn
	for _, k := range keys {
		rs := by[k]
		add := func(chart, line string, pts []TrackPoint) {
			if len(pts) > 0 {
				out = append(out, Track{Stage: k.stage, Target: k.target, Endpoint: k.endpoint, Chart: chart, Line: line, Points: pts})
			}
		}
		add(SeriesRunning, "", trackOf(rs, result.RunningGauges, CombineSum))
		add(SeriesWaiting, "", trackOf(rs, result.WaitingGauges, CombineSum))
		add(SeriesKVCache, "", trackOf(rs, result.KVCacheGauges, CombineMean))
		var power []TrackPoint
		for _, r := range rs {
			if v, ok := readPower(r); ok {
				power = append(power, TrackPoint{Level: r.Level, T: r.Time, V: v})
			}
		}
		add(SeriesGPUPower, "", power)
		if k.endpoint {
			continue
		}
		lines, rest, constant := otherGauges(rs)
		for _, l := range lines {
			add(l.metric, l.labels, l.pts)
		}
		if len(rest)+len(constant) > 0 {
			undrawn = append(undrawn, Undrawn{Stage: k.stage, Target: k.target, Metrics: rest, Constant: constant})
		}
	}
	return out, undrawn
}

// trackOf is Series with each value's level.
func trackOf(rs []*result.TelemetryScrape, names []string, how Combine) []TrackPoint {
	level := map[time.Time]int{}
	for _, r := range rs {
		level[r.Time] = r.Level
	}
	var out []TrackPoint
	for _, tv := range Series(rs, names, how) {
		out = append(out, TrackPoint{Level: level[tv.T], T: tv.T, V: tv.V})
	}
	return out
}

// drawnElsewhere are the metrics a target's tracks already draw (engine
// state, GPU power) or that no line over time can show.
func drawnElsewhere(metric string) bool {
	for _, list := range [][]string{result.RunningGauges, result.WaitingGauges, result.KVCacheGauges} {
		if slices.Contains(list, metric) {
			return true
		}
	}
	for _, v := range gpuVendors {
		if slices.Contains(v.power, metric) {
			return true
		}
	}
	for _, suffix := range []string{"_total", "_bucket", "_sum", "_count", "_created", "_info"} {
		if strings.HasSuffix(metric, suffix) {
			return true
		}
	}
	return false
}

type gaugeLine struct {
	metric, labels string
	pts            []TrackPoint
}

// otherGauges are a target's other gauges that changed during the stage, a
// line per metric and label set within the bounds; the metric names left
// out; and those that held one value throughout ("name = value").
func otherGauges(rs []*result.TelemetryScrape) (lines []gaugeLine, rest, constant []string) {
	byMetric := map[string]map[string][]TrackPoint{}
	sets := map[string]map[string]map[string]string{} // metric → label text → labels
	for _, r := range rs {
		for _, s := range r.Samples {
			if drawnElsewhere(s.Metric) {
				continue
			}
			m := byMetric[s.Metric]
			if m == nil {
				m, sets[s.Metric] = map[string][]TrackPoint{}, map[string]map[string]string{}
				byMetric[s.Metric] = m
			}
			l := labelText(s.Labels)
			m[l] = append(m[l], TrackPoint{Level: r.Level, T: r.Time, V: s.Value})
			sets[s.Metric][l] = s.Labels
		}
	}
	var names []string
	for _, name := range slices.Sorted(maps.Keys(byMetric)) {
		if v, ok := oneValue(byMetric[name]); ok {
			constant = append(constant, name+" = "+strconv.FormatFloat(v, 'g', 6, 64))
			continue
		}
		names = append(names, name)
	}
	for i, name := range names {
		if i >= maxOtherMetrics {
			rest = append(rest, name)
			continue
		}
		keys := slices.Sorted(maps.Keys(byMetric[name]))
		if len(keys) > maxOtherLines {
			rest = append(rest, name+" (beyond its first "+strconv.Itoa(maxOtherLines)+" of "+strconv.Itoa(len(keys))+" label sets)")
			keys = keys[:maxOtherLines]
		}
		short := shortNames(keys, sets[name])
		for _, l := range keys {
			lines = append(lines, gaugeLine{metric: name, labels: short[l], pts: byMetric[name][l]})
		}
	}
	return lines, rest, constant
}

// oneValue is the value every point of every label set holds, if one does.
func oneValue(sets map[string][]TrackPoint) (float64, bool) {
	first, seen := 0.0, false
	for _, pts := range sets {
		for _, p := range pts {
			if !seen {
				first, seen = p.V, true
			} else if p.V != first {
				return 0, false
			}
		}
	}
	return first, seen
}

// shortNames names each label set by what tells it from the others: the
// one label whose values all differ, the shortest such (a GPU's gpu=0
// rather than its UUID), else every label that is not the same in all of
// them; a lone set keeps all its labels.
func shortNames(keys []string, sets map[string]map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = k
	}
	if len(keys) < 2 {
		return out
	}
	names := map[string]bool{}
	for _, k := range keys {
		for n := range sets[k] {
			names[n] = true
		}
	}
	best, bestLen := "", 0
	var differ []string
	for _, n := range slices.Sorted(maps.Keys(names)) {
		seen, length, same := map[string]bool{}, 0, true
		for _, k := range keys {
			v := sets[k][n]
			seen[v], length = true, length+len(v)
			same = same && v == sets[keys[0]][n]
		}
		if !same {
			differ = append(differ, n)
		}
		if len(seen) == len(keys) && (best == "" || length < bestLen) {
			best, bestLen = n, length
		}
	}
	for _, k := range keys {
		if best != "" {
			out[k] = best + "=" + sets[k][best]
			continue
		}
		var parts []string
		for _, n := range differ {
			parts = append(parts, n+"="+sets[k][n])
		}
		out[k] = strings.Join(parts, ",")
	}
	return out
}

// labelText is a label set as one line: k=v, sorted by name.
func labelText(l map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
