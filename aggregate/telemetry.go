package aggregate

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// Telemetry: a level's reads of telemetry.jsonl (result.TelemetryScrape)
// become the point's server-state and GPU metrics here, a pure function of
// the reads and the level's record. The helpers are exported for whatever
// else reads the same records over other windows (time slices, charts).

// TimeValue is one value of a telemetry series, at the time of its read.
type TimeValue struct {
	T time.Time
	V float64
}

// Combine says how the label sets of one metric in one read become one value.
type Combine int

// Ways to combine a read's label sets.
const (
	CombineSum  Combine = iota // requests running over several engines, power over GPUs
	CombineMean                // a share (KV-cache usage) over several engines
	CombineMax
)

// Series is, for every read that holds one of names (the first of them the
// read holds), its label sets' values combined, in the order of reads
// (sorted by time: see SortReads). Reads that failed hold no samples and are
// skipped, so a series has gaps where the target did not answer.
func Series(reads []*result.TelemetryScrape, names []string, how Combine) []TimeValue {
	var out []TimeValue
	for _, r := range reads {
		for _, name := range names {
			v, n := 0.0, 0
			for _, s := range r.Samples {
				if s.Metric != name {
					continue
				}
				switch {
				case n == 0:
					v = s.Value
				case how == CombineMax:
					v = max(v, s.Value)
				default:
					v += s.Value
				}
				n++
			}
			if n == 0 {
				continue
			}
			if how == CombineMean {
				v /= float64(n)
			}
			out = append(out, TimeValue{r.Time, v})
			break
		}
	}
	return out
}

// SortReads sorts reads by time, then target (a stable order whatever order
// they were appended in, so a live run and a recomputed report agree).
func SortReads(reads []*result.TelemetryScrape) {
	slices.SortStableFunc(reads, func(a, b *result.TelemetryScrape) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Target, b.Target)
	})
}

// Windows are a level record's measured windows: its replicates', or its
// one window.
func Windows(rec *result.LevelRecord) []result.Window {
	if len(rec.Windows) > 0 {
		return rec.Windows
	}
	return []result.Window{{Start: rec.Start, End: rec.End, WallNs: rec.WallNs}}
}

// InWindows returns the values read inside one of the windows (edges
// included).
func InWindows(pts []TimeValue, ws []result.Window) []float64 {
	var out []float64
	for _, p := range pts {
		for _, w := range ws {
			if !p.T.Before(w.Start) && !p.T.After(w.End) {
				out = append(out, p.V)
				break
			}
		}
	}
	return out
}

// At is the series' value at t, interpolated linearly between the reads on
// either side of it; false when t is before the first read or after the
// last (a counter's value there is unknown).
func At(pts []TimeValue, t time.Time) (float64, bool) {
	for i, p := range pts {
		if p.T.Equal(t) {
			return p.V, true
		}
		if p.T.After(t) {
			if i == 0 {
				return 0, false
			}
			q := pts[i-1]
			span := float64(p.T.Sub(q.T))
			return q.V + (p.V-q.V)*float64(t.Sub(q.T))/span, true
		}
	}
	return 0, false
}

// Integral is the series integrated over [start, end] in value·seconds, by
// the trapezoid rule over its reads, the value at each edge interpolated
// between the reads around it. An edge beyond the first or last read takes
// that read's value (held is then true). ok is false with no read at all.
func Integral(pts []TimeValue, start, end time.Time) (v float64, held, ok bool) {
	if len(pts) == 0 || !end.After(start) {
		return 0, false, len(pts) > 0
	}
	edge := func(t time.Time) float64 {
		if x, ok := At(pts, t); ok {
			return x
		}
		held = true
		if t.Before(pts[0].T) {
			return pts[0].V
		}
		return pts[len(pts)-1].V
	}
	seg := []TimeValue{{start, edge(start)}}
	for _, p := range pts {
		if p.T.After(start) && p.T.Before(end) {
			seg = append(seg, p)
		}
	}
	seg = append(seg, TimeValue{end, edge(end)})
	for i := 1; i < len(seg); i++ {
		v += (seg[i].V + seg[i-1].V) / 2 * seg[i].T.Sub(seg[i-1].T).Seconds()
	}
	return v, held, true
}

// gaugeStats are a gauge's mean, p95 (the reference's percentile rule) and
// max over values; ok is false without values.
func gaugeStats(vals []float64) (mean, p95, maxv float64, ok bool) {
	if len(vals) == 0 {
		return 0, 0, 0, false
	}
	var s exactSum
	for _, v := range vals {
		s.add(v)
	}
	sorted := slices.Sorted(slices.Values(vals))
	return s.mean(int64(len(vals))), sorted[hist.Index(0.95, len(sorted))], sorted[len(sorted)-1], true
}

// preemptionCounters are the engines' preemption counters (without _total),
// whose deltas over the window are in the level's server counters.
var preemptionCounters = []string{"vllm:num_preemptions"}

// maxLevelReads bounds the telemetry reads a level keeps for its point
// (more are counted and left out, with a warning): at one read a second of
// a few targets, hours of level.
const maxLevelReads = 200_000

// telemetry sets the point's server-state and GPU metrics from the level's
// reads.
func (b *builder) telemetry(reads []*result.TelemetryScrape, dropped int) {
	p := &b.p
	if d := b.rec.Server; d != nil {
		for _, n := range preemptionCounters {
			if v, ok := d.Counters[n]; ok {
				p.ServerPreemptions = result.Ptr(int64(math.Round(v)))
				break
			}
		}
	}
	if len(reads) == 0 {
		return
	}
	reads = slices.Clone(reads)
	SortReads(reads)
	reads = firstShard(reads)
	ws := Windows(b.rec)
	var endpoint []*result.TelemetryScrape
	for _, r := range reads {
		if r.Endpoint {
			endpoint = append(endpoint, r)
		}
	}
	b.serverState(endpoint, ws)
	b.gpus(reads, ws)
	b.telemetryWarnings(reads, dropped)
}

// firstShard keeps, for each target, the reads of the lowest shard that
// read it: the shards of a sharded run read the same targets, whose GPUs
// must be counted once.
func firstShard(reads []*result.TelemetryScrape) []*result.TelemetryScrape {
	low := map[string]int{}
	for _, r := range reads {
		k := targetKey(r)
		if s, ok := low[k]; !ok || r.Shard < s {
			low[k] = r.Shard
		}
	}
	return slices.DeleteFunc(reads, func(r *result.TelemetryScrape) bool { return r.Shard != low[targetKey(r)] })
}

func targetKey(r *result.TelemetryScrape) string {
	if r.Endpoint {
		return "endpoint\x00" + r.Target
	}
	return "target\x00" + r.Target
}

// serverState sets the engine's gauges over the window.
func (b *builder) serverState(reads []*result.TelemetryScrape, ws []result.Window) {
	p := &b.p
	for _, g := range []struct {
		names             []string
		how               Combine
		dec               int
		mean, p95, maxv   **float64
		metricP95, metric string
	}{
		{result.RunningGauges, CombineSum, 2, &p.ServerRunningMean, &p.ServerRunningP95, &p.ServerRunningMax, "server_running_p95", "running"},
		{result.WaitingGauges, CombineSum, 2, &p.ServerWaitingMean, &p.ServerWaitingP95, &p.ServerWaitingMax, "server_waiting_p95", "waiting"},
		{result.KVCacheGauges, CombineMean, 4, &p.KVCacheUsageMean, &p.KVCacheUsageP95, &p.KVCacheUsageMax, "kv_cache_usage_p95", "kv"},
	} {
		vals := InWindows(Series(reads, g.names, g.how), ws)
		mean, p95, maxv, ok := gaugeStats(vals)
		if !ok {
			continue
		}
		*g.mean = result.Ptr(result.Round(mean, g.dec))
		*g.p95 = result.Ptr(result.Round(p95, g.dec))
		*g.maxv = result.Ptr(result.Round(maxv, g.dec))
		if len(vals) < hist.MinSamples(0.95) {
			b.low = append(b.low, g.metricP95)
		}
	}
}

// gpuVendor is how one exporter names a GPU's figures.
type gpuVendor struct {
	name  string
	power []string // W, first present wins
	// energy is a counter of energy since boot, energyJ its unit in joules.
	energy  string
	energyJ float64
	util    string // %
	mem     string // MiB
	// key are the labels that name one GPU (others, such as the pod using
	// it, may change while it runs).
	key []string
	// primary keeps a GPU's row: AMD's partitions other than 0 repeat the
	// device with zero power and no energy.
	primary func(l map[string]string) bool
}

var gpuVendors = []gpuVendor{
	{
		name: "DCGM exporter", power: []string{"DCGM_FI_DEV_POWER_USAGE"},
		energy: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", energyJ: 1e-3, // mJ
		util: "DCGM_FI_DEV_GPU_UTIL", mem: "DCGM_FI_DEV_FB_USED",
		key: []string{"Hostname", "hostname", "gpu", "UUID", "uuid"},
	},
	{
		name: "AMD device metrics exporter", power: []string{"gpu_package_power", "gpu_power_usage", "gpu_average_package_power"},
		energy: "gpu_energy_consumed", energyJ: 1e-6, // µJ
		util: "gpu_gfx_activity", mem: "gpu_used_vram",
		key:     []string{"hostname", "gpu_id", "serial_number"},
		primary: func(l map[string]string) bool { return l["gpu_partition_id"] == "" || l["gpu_partition_id"] == "0" },
	},
}

// blank reports whether v is one of DCGM's "blank" sentinels (a field the
// GPU does not support: DCGM_INT32_BLANK 0x7ffffff0 and up, DCGM_INT64_BLANK
// 0x7ffffffffffffff0 and up, DCGM_FP64_BLANK 140737488355328 and up), which
// the exporter passes through as numbers (its own README shows
// DCGM_FI_DEV_MEMORY_TEMP ... 9223372036854775794). A gauge of power,
// utilisation or MiB never comes near 2^31; an energy counter in mJ may, so
// it is held to the 64-bit sentinel alone.
func blank(v float64, counter bool) bool {
	if counter {
		return v >= 9223372036854775792
	}
	return v >= 2147483632
}

// gpuSeries is, per GPU (by its key labels), the values of metric in each
// read, blanks left out; a GPU repeated in one read (MIG instances each
// carry the device's figures) counts once, at its largest value.
func (g *gpuVendor) gpuSeries(reads []*result.TelemetryScrape, metric string, counter bool) map[string][]TimeValue {
	out := map[string][]TimeValue{}
	for _, r := range reads {
		seen := map[string]int{}
		for _, s := range r.Samples {
			if s.Metric != metric || blank(s.Value, counter) || (g.primary != nil && !g.primary(s.Labels)) {
				continue
			}
			k := g.gpuKey(s.Labels)
			if i, ok := seen[k]; ok {
				out[k][i].V = max(out[k][i].V, s.Value)
				continue
			}
			seen[k] = len(out[k])
			out[k] = append(out[k], TimeValue{r.Time, s.Value})
		}
	}
	return out
}

func (g *gpuVendor) gpuKey(l map[string]string) string {
	var b strings.Builder
	for _, k := range g.key {
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	return b.String()
}

// total sums per-GPU series read by read: one value per read that had any.
func total(per map[string][]TimeValue) []TimeValue {
	byT := map[time.Time]float64{}
	for _, k := range slices.Sorted(maps.Keys(per)) {
		for _, tv := range per[k] {
			byT[tv.T] += tv.V
		}
	}
	out := make([]TimeValue, 0, len(byT))
	for t, v := range byT {
		out = append(out, TimeValue{t, v})
	}
	slices.SortFunc(out, func(a, b TimeValue) int { return a.T.Compare(b.T) })
	return out
}

// gpuTarget is one target's GPUs over the window.
type gpuTarget struct {
	target, vendor string
	gpus           int
	energyJ        float64
	method         string // "counter" or "power"
	noCounter      string // with "power": why the energy counter could not be read
	held           bool   // the power integral held an edge's value
	powerMax       *float64
	utilMean       *float64
	memMax         *float64
}

// gpus sets the GPU metrics from every telemetry target that reports GPUs.
func (b *builder) gpus(reads []*result.TelemetryScrape, ws []result.Window) {
	byTarget := map[string][]*result.TelemetryScrape{}
	for _, r := range reads {
		if !r.Endpoint {
			byTarget[r.Target] = append(byTarget[r.Target], r)
		}
	}
	var ts []gpuTarget
	for _, name := range slices.Sorted(maps.Keys(byTarget)) {
		if t, ok := gpuFigures(name, byTarget[name], ws); ok {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return
	}
	p := &b.p
	var gpus int
	var energy, powerMax, memMax float64
	var utilSum exactSum
	var utilN int
	var sources []string
	haveMax, haveMem, energyOK := false, false, true
	for _, t := range ts {
		gpus += t.gpus
		energy += t.energyJ
		if t.method == "" {
			energyOK = false
		}
		if t.powerMax != nil {
			powerMax, haveMax = powerMax+*t.powerMax, true
		}
		if t.memMax != nil {
			memMax, haveMem = memMax+*t.memMax, true
		}
		if t.utilMean != nil {
			utilSum.add(*t.utilMean * float64(t.gpus))
			utilN += t.gpus
		}
		sources = append(sources, t.source())
	}
	p.GPUCount = result.Ptr(gpus)
	if haveMax {
		p.GPUPowerMaxW = result.Ptr(result.Round(powerMax, 1))
	}
	if haveMem {
		p.GPUMemoryUsedMaxMiB = result.Ptr(result.Round(memMax, 0))
	}
	if utilN > 0 {
		p.GPUUtilMeanPercent = result.Ptr(result.Round(utilSum.mean(int64(utilN)), 1))
	}
	src := strings.Join(sources, "; ")
	p.EnergySource = &src
	wall := time.Duration(0)
	for _, w := range ws {
		wall += time.Duration(w.WallNs)
	}
	if !energyOK || wall <= 0 {
		p.Warnings = append(p.Warnings, "GPU energy over the window is unknown: "+src)
		return
	}
	p.EnergyJ = result.Ptr(result.Round(energy, 1))
	p.GPUPowerMeanW = result.Ptr(result.Round(energy/wall.Seconds(), 1))
	if tok := b.a.outTotal; tok > 0 && energy > 0 {
		p.EnergyPerOutputTokMJ = result.Ptr(result.Round(1000*energy/float64(tok), 3))
		p.OutputTokensPerJoule = result.Ptr(result.Round(float64(tok)/energy, 4))
	}
	p.Notes = append(p.Notes, "GPU energy: "+src+"; energy per output token is energy_j over the output tokens of the successes in the same window as output_tps_total, so it equals gpu_power_mean_w over output_tps_total")
}

// source says how the target's energy was obtained.
func (t *gpuTarget) source() string {
	s := fmt.Sprintf("target %s (%s, %d GPUs): ", t.target, t.vendor, t.gpus)
	switch t.method {
	case "counter":
		return s + "energy counter deltas over the window, interpolated at its edges between the reads around them"
	case "power":
		s += "power integrated over the reads (trapezoid rule; " + t.noCounter + ")"
		if t.held {
			s += ", an edge of the window beyond the first or last read taking that read's power"
		}
		return s
	}
	return s + "no energy: fewer than two reads with power"
}

// gpuFigures reads one target's GPUs, trying each exporter's names; false
// when the target reports no GPU power.
func gpuFigures(name string, reads []*result.TelemetryScrape, ws []result.Window) (gpuTarget, bool) {
	for i := range gpuVendors {
		g := &gpuVendors[i]
		var power map[string][]TimeValue
		for _, m := range g.power {
			if power = g.gpuSeries(reads, m, false); len(power) > 0 {
				break
			}
		}
		if len(power) == 0 {
			continue
		}
		t := gpuTarget{target: name, vendor: g.name, gpus: len(power)}
		powerTotal := total(power)
		if _, _, maxv, ok := gaugeStats(InWindows(powerTotal, ws)); ok {
			t.powerMax = &maxv
		}
		if _, _, maxv, ok := gaugeStats(InWindows(total(g.gpuSeries(reads, g.mem, false)), ws)); ok {
			t.memMax = &maxv
		}
		var us []float64
		for _, s := range g.gpuSeries(reads, g.util, false) {
			us = append(us, InWindows(s, ws)...)
		}
		if mean, _, _, ok := gaugeStats(us); ok {
			t.utilMean = &mean
		}
		e, why := counterEnergy(g.gpuSeries(reads, g.energy, true), ws, len(power))
		if why == "" {
			t.energyJ, t.method = e*g.energyJ, "counter"
			return t, true
		}
		if len(powerTotal) >= 2 {
			var e float64
			for _, w := range ws {
				v, held, _ := Integral(powerTotal, w.Start, w.End)
				e += v
				t.held = t.held || held
			}
			t.energyJ, t.method, t.noCounter = e, "power", why
		}
		return t, true
	}
	return gpuTarget{}, false
}

// counterEnergy is the sum over GPUs of each energy counter's increase over
// the windows, each edge interpolated between the reads around it. When it
// cannot be read, why says so, for the energy source: some GPU with power
// has no counter (or a blank one), a counter went backwards (a driver
// reload), or a window edge is outside a GPU's refreshes (a level shorter
// than the exporter's interval, or reads that repeat one refresh at an
// edge, as a busy machine's late reads do).
func counterEnergy(per map[string][]TimeValue, ws []result.Window, gpus int) (sum float64, why string) {
	if len(per) < gpus || len(per) == 0 {
		return 0, "the energy counter was missing or blank"
	}
	for _, k := range slices.Sorted(maps.Keys(per)) {
		s := per[k]
		for i := 1; i < len(s); i++ {
			if s[i].V < s[i-1].V {
				return 0, "the energy counter went backwards, as on a driver reload"
			}
		}
		s = changes(s)
		for _, w := range ws {
			a, okA := At(s, w.Start)
			z, okZ := At(s, w.End)
			if !okA || !okZ {
				return 0, "the energy counter's refreshes did not bracket the window's edges"
			}
			sum += z - a
		}
	}
	return sum, ""
}

// usedMetrics are the metrics the point reads, and keyLabels the labels it
// tells their series apart by: a level keeps only those of its reads, so a
// long level's telemetry stays a few numbers a read.
var usedMetrics, keyLabels = func() (map[string]bool, map[string]bool) {
	m, k := map[string]bool{}, map[string]bool{"gpu_partition_id": true}
	for _, l := range [][]string{result.RunningGauges, result.WaitingGauges, result.KVCacheGauges} {
		for _, n := range l {
			m[n] = true
		}
	}
	for _, g := range gpuVendors {
		for _, n := range append(slices.Clone(g.power), g.energy, g.util, g.mem) {
			m[n] = true
		}
		for _, l := range g.key {
			k[l] = true
		}
	}
	return m, k
}()

// compact is r with only the samples and labels the point reads.
func compact(r *result.TelemetryScrape) *result.TelemetryScrape {
	c := *r
	c.Samples = nil
	for _, s := range r.Samples {
		if !usedMetrics[s.Metric] {
			continue
		}
		var l map[string]string
		for k, v := range s.Labels {
			if keyLabels[k] {
				if l == nil {
					l = map[string]string{}
				}
				l[k] = v
			}
		}
		c.Samples = append(c.Samples, result.TelemetrySample{Metric: s.Metric, Labels: l, Value: s.Value})
	}
	return &c
}

// changes is a counter's series reduced to its first read and the reads
// where its value changed. An exporter refreshes its values once per
// collection interval (the DCGM exporter's default is 30 s), so between
// refreshes every read repeats the last value: interpolating between
// repeated values would put a whole interval's energy at the refresh
// instant, where interpolating between the refreshes spreads it over the
// time it was used. A window whose end no later refresh brackets (a level
// shorter than the exporter's interval) cannot be read from the counter
// (counterEnergy then fails, and power is integrated instead). The error
// left is at most about one read interval's energy at each edge.
//
// The first read is when the value was seen, not when it was taken: it
// counts as a refresh only when the next read already shows another value
// (an exporter that refreshes at every read, as AMD's does).
func changes(s []TimeValue) []TimeValue {
	if len(s) < 2 {
		return nil
	}
	var out []TimeValue
	if s[1].V != s[0].V {
		out = append(out, s[0])
	}
	prev := s[0].V
	for _, p := range s[1:] {
		if p.V != prev {
			out = append(out, p)
			prev = p.V
		}
	}
	return out
}

// telemetryWarnings says which targets failed reads during the level.
func (b *builder) telemetryWarnings(reads []*result.TelemetryScrape, dropped int) {
	type count struct {
		n, failed int
		last      string
	}
	byTarget := map[string]*count{}
	for _, r := range reads {
		k := r.Target
		if r.Endpoint {
			k = "endpoint " + r.Target + " (/metrics)"
		}
		c := byTarget[k]
		if c == nil {
			c = &count{}
			byTarget[k] = c
		}
		c.n++
		if r.Error != "" {
			c.failed++
			c.last = r.Error
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byTarget)) {
		if c := byTarget[k]; c.failed > 0 {
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
				"telemetry %s: %d of %d reads during this level failed (last: %s): its figures come from the %d that answered",
				k, c.failed, c.n, c.last, c.n-c.failed))
		}
	}
	if dropped > 0 {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("telemetry: %d reads of this level past the first %d were left out of its figures", dropped, maxLevelReads))
	}
}
