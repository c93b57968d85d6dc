package aggregate

import (
	"fmt"
	"strings"
	"time"

	"github.com/runnerbench/runner/result"
)

// Shards. A shard's own level record says what part of the level it ran
// (or that it had none: skipped) and how late its window opened against the
// schedule; a level merged from shards (runner merge) holds every shard's
// window and client load as its Parts, and its requests carry their shard.
// The merged point's numbers come from the union of the shards' requests
// like any level's; this file adds what only shards have: warnings about
// their windows, and the client diagnostics judged shard by shard, so a
// merged level is client-bound when any shard was.

// ShardSkewLimit is how far apart the shards' windows may open (and how late
// one may open against the schedule) before a level is flagged: 1% of the
// level's window, at least 10 ms. A shard that opened s late ran its load for
// s less than the others, which moves the level's throughput by at most
// s / window of one shard's share.
func ShardSkewLimit(window time.Duration) time.Duration {
	return max(10*time.Millisecond, window/100)
}

// shardWarnings warns about a shard's skipped or late level, and about a
// merged level whose shards' windows did not open together.
func (b *builder) shardWarnings() {
	rec, p := b.rec, &b.p
	if rec.Skipped {
		p.Warnings = append(p.Warnings, "this shard's part of the level was empty (fewer streams, requests or arrivals than shards): it sent nothing, and the other shards ran the level")
		return
	}
	limit := ShardSkewLimit(rec.Wall())
	if len(rec.Parts) == 0 {
		if late := msDur(rec.LateStartMs); late > limit {
			p.Warnings = append(p.Warnings, fmt.Sprintf(
				"the measured window opened %s after its scheduled instant (more than %s): the slot's warm-up allowance (--slot-warmup) was too short, or the process started late", result.FormatMs(rec.LateStartMs), result.FormatDuration(limit)))
		}
		return
	}
	var first, last time.Time
	var late []string
	for _, part := range rec.Parts {
		if part.Skipped {
			continue
		}
		if first.IsZero() || part.Start.Before(first) {
			first = part.Start
		}
		if part.Start.After(last) {
			last = part.Start
		}
		if msDur(part.LateStartMs) > limit {
			late = append(late, fmt.Sprintf("shard %d by %s", part.Shard, result.FormatMs(part.LateStartMs)))
		}
	}
	if spread := last.Sub(first); spread > limit {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"the shards' measured windows opened %s apart (more than %s, 1%% of the level's window): part of the level ran without every shard's load", result.FormatDuration(spread), result.FormatDuration(limit)))
	}
	if len(late) > 0 {
		p.Warnings = append(p.Warnings, "windows opened late against the schedule (the slot's warm-up allowance, --slot-warmup, was too short, or a shard started late): "+strings.Join(late, ", "))
	}
}

// partsClient sets a merged level's client diagnostics from its shards: the
// highest CPU share and scheduling latency of any shard (each over its own
// window: summed they would describe no machine), and flags the level when
// any shard's own load, scheduling latency or dispatch lag (over its own
// requests) says that shard set the pace.
func (b *builder) partsClient() {
	p := &b.p
	for _, part := range b.rec.Parts {
		if part.Skipped || part.WallNs <= 0 {
			continue
		}
		wall := time.Duration(part.WallNs)
		cpu := result.Round(100*float64(part.Client.CPUNs)/float64(wall), 1)
		if p.ClientCPUPercent == nil || cpu > *p.ClientCPUPercent {
			p.ClientCPUPercent = result.Ptr(cpu)
		}
		if s := part.Client.SchedP90Ms; s != nil && (p.ClientSchedP90Ms == nil || *s > *p.ClientSchedP90Ms) {
			p.ClientSchedP90Ms = result.Ptr(*s)
		}
		var lag *float64
		if s := b.a.lagShard[part.Shard]; s != nil {
			sum := s.finish()
			if v, ok := sum.quantile(0.99); ok {
				lag = &v
			}
		}
		b.judgeClient(fmt.Sprintf("shard %d: ", part.Shard), part.Client, wall, lag, part.CapWaits)
	}
}

// trackShards makes the level keep each shard's dispatch lags apart (a
// merged level's, whose record has Parts).
func (l *Level) trackShards() {
	l.mu.Lock()
	l.all.lagShard = map[int]*series{}
	l.mu.Unlock()
}

// addShardLag counts a request's dispatch lag toward its shard's.
func (a *acc) addShardLag(r *result.Request) {
	s := a.lagShard[r.Shard]
	if s == nil {
		s = &series{limit: a.limit}
		a.lagShard[r.Shard] = s
	}
	s.add(r.DispatchLagMs)
}

func msDur(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
