package aggregate

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// mergedRecord is a level record merged from parts, over [t0, t0+wall).
func mergedRecord(wall time.Duration, parts ...result.LevelPart) *result.LevelRecord {
	rec := record(wall, nil)
	rec.Parts = parts
	return rec
}

func part(shard int, start, wall time.Duration, cpu time.Duration) result.LevelPart {
	return result.LevelPart{Shard: shard, Start: t0.Add(start), End: t0.Add(start + wall), WallNs: int64(wall),
		Client: result.ClientLoad{CPUNs: int64(cpu), Procs: 1, SchedP90Ms: f(0.01)}}
}

// pointOf feeds reqs to a level opened with rec, as replay does, in order.
func pointOf(rec *result.LevelRecord, reqs []*result.Request) result.Point {
	s := NewStage(0)
	if rec.Spec.Label == "" {
		rec.Spec = result.LevelSpec{Label: "c=6", Concurrency: 6, OutputTokens: 300}
	}
	s.LevelStarted(rec)
	for _, r := range reqs {
		s.Request(r)
	}
	return s.LevelDone(rec)
}

// TestMergedLevelIsTheUnion: a level merged from shards has exactly the
// numbers of the union of their requests, whichever shard sent which and
// in whatever order they are read; only the client diagnostics, which are
// each shard's own, come from the parts.
func TestMergedLevelIsTheUnion(t *testing.T) {
	reqs := randomRequests(1500, 3)
	for i, r := range reqs {
		r.Shard = i % 3
	}
	parts := []result.LevelPart{part(0, 0, time.Second, 100*time.Millisecond), part(1, 0, time.Second, 200*time.Millisecond), part(2, 0, time.Second, 50*time.Millisecond)}
	whole := pointOf(record(time.Second, nil), reqs)
	byShard := slices.Clone(reqs)
	slices.SortStableFunc(byShard, func(a, b *result.Request) int { return a.Shard - b.Shard })
	merged := pointOf(mergedRecord(time.Second, parts...), byShard)
	if merged.ClientCPUPercent == nil || *merged.ClientCPUPercent != 20 {
		t.Errorf("client CPU %v, want the busiest shard's 20%%", merged.ClientCPUPercent)
	}
	merged.ClientCPUPercent, whole.ClientCPUPercent = nil, nil
	merged.ClientSchedP90Ms, whole.ClientSchedP90Ms = nil, nil
	if !reflect.DeepEqual(merged, whole) {
		t.Errorf("the merged point differs from the union's:\nmerged %+v\nunion  %+v", merged, whole)
	}
	var ttft []float64
	for _, r := range reqs {
		if r.OK {
			ttft = append(ttft, *r.TTFTMs)
		}
	}
	slices.Sort(ttft)
	if v, _ := pct(ttft, 0.95); merged.TTFTP95Ms == nil || *merged.TTFTP95Ms != v {
		t.Errorf("ttft p95 %v, the union's sorted samples give %v", merged.TTFTP95Ms, v)
	}
}

// TestMergedClientJudgedPerShard: a merged level is client-bound when any
// one shard was, by its CPU, or by the dispatch lag of its own requests
// even where the union's p99 stays under the limit.
func TestMergedClientJudgedPerShard(t *testing.T) {
	var reqs []*result.Request
	for i := range 600 {
		r := ok(50, 500, 100, 100)
		r.Seq, r.Shard = i, i%3
		if r.Shard == 2 && i%150 == 2 { // 2% of shard 2's requests, 0.7% of all
			r.DispatchLagMs = 40
		}
		reqs = append(reqs, r)
	}
	calm := []result.LevelPart{part(0, 0, time.Second, 0), part(1, 0, time.Second, 0), part(2, 0, time.Second, 0)}
	open := mergedRecord(time.Second, calm...)
	open.Spec = result.LevelSpec{Label: "rate=6", Rate: f(6), OutputTokens: 300}
	p := pointOf(open, reqs)
	if !p.ClientBottleneck || len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "shard 2: dispatch lag p99 40.0 ms") {
		t.Errorf("lag of one shard: bottleneck %v, warnings %q", p.ClientBottleneck, p.Warnings)
	}
	if p := pointOf(mergedRecord(time.Second, calm...), reqs); p.ClientBottleneck {
		t.Errorf("a closed loop's lag (no schedule to be late against) flagged the client: %q", p.Warnings)
	}
	if *p.DispatchLagP99Ms > 5 {
		t.Fatalf("the union's lag p99 is %v: the test needs it under the limit", *p.DispatchLagP99Ms)
	}
	for _, r := range reqs {
		r.DispatchLagMs = 0
	}
	busy := []result.LevelPart{part(0, 0, time.Second, 0), part(1, 0, time.Second, 950*time.Millisecond), part(2, 0, time.Second, 0)}
	p = pointOf(mergedRecord(time.Second, busy...), reqs)
	if !p.ClientBottleneck || len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "shard 1: client CPU at 95%") || *p.ClientCPUPercent != 95 {
		t.Errorf("one busy shard: bottleneck %v, cpu %v, warnings %q", p.ClientBottleneck, *p.ClientCPUPercent, p.Warnings)
	}
	p = pointOf(mergedRecord(time.Second, calm...), reqs)
	if p.ClientBottleneck || len(p.Warnings) != 0 {
		t.Errorf("calm shards: bottleneck %v, warnings %q", p.ClientBottleneck, p.Warnings)
	}
}

// TestShardWindowWarnings: a skipped part, a late window and shards whose
// windows opened apart are said, beyond 1% of the window (10 ms at least).
func TestShardWindowWarnings(t *testing.T) {
	reqs := []*result.Request{ok(50, 500, 100, 100)}
	skipped := &result.LevelRecord{Skipped: true, Shard: &result.Shard{Index: 2, Count: 3}}
	if p := pointOf(skipped, nil); len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "part of the level was empty") || p.NRequests != 0 {
		t.Errorf("skipped: %q", p.Warnings)
	}
	late := record(10*time.Second, nil)
	late.LateStartMs = 150
	if p := pointOf(late, reqs); len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "opened 150 ms after its scheduled instant (more than 100 ms)") {
		t.Errorf("late: %q", p.Warnings)
	}
	late.LateStartMs = 90
	if p := pointOf(late, reqs); len(p.Warnings) != 0 {
		t.Errorf("late within the bound: %q", p.Warnings)
	}
	apart := mergedRecord(10*time.Second, part(0, 0, 10*time.Second, 0), part(1, 120*time.Millisecond, 9880*time.Millisecond, 0))
	apart.Parts[1].LateStartMs = 120
	if p := pointOf(apart, reqs); len(p.Warnings) != 2 || !strings.Contains(p.Warnings[0], "opened 120 ms apart (more than 100 ms") || !strings.Contains(p.Warnings[1], "shard 1 by 120 ms") {
		t.Errorf("apart: %q", p.Warnings)
	}
	together := mergedRecord(10*time.Second, part(0, 0, 10*time.Second, 0), part(1, 5*time.Millisecond, 10*time.Second, 0))
	together.Parts = append(together.Parts, result.LevelPart{Shard: 2, Skipped: true})
	if p := pointOf(together, reqs); len(p.Warnings) != 0 {
		t.Errorf("together (a skipped part has no window): %q", p.Warnings)
	}
}
