package cli

import (
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/shard"
	"github.com/runnerbench/runner/scenario"
)

// JobIndexEnv is where --shards N reads its shard's index: a Kubernetes
// Indexed Job sets it in every pod.
const JobIndexEnv = "JOB_COMPLETION_INDEX"

// Default slot settings of a scheduled run: enough for a level's
// connections, its warm-up requests and a counter read; and the grace an
// unscheduled level gives requests in flight after its duration.
const (
	DefaultSlotWarmup = 10 * time.Second
	DefaultSlotDrain  = 30 * time.Second
)

func (o *RunOptions) registerShardFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Shard, "shard", "", "run shard `i/N` (0-based) of a sharded run: this process's part of every level; needs --start-at")
	fs.IntVar(&o.Shards, "shards", 0, "run one of `N` shards, the index read from $"+JobIndexEnv+" (a Kubernetes Indexed Job's); needs --start-at")
	fs.StringVar(&o.StartAt, "start-at", "", "start the first level's slot at this RFC 3339 `time` (every shard of a run is given the same); each level then starts at a fixed instant")
	fs.DurationVar(&o.SlotWarmup, "slot-warmup", DefaultSlotWarmup, "in a scheduled run, the `time` each level's slot allows for its connections and warm-ups before its measured window opens")
	fs.DurationVar(&o.SlotDrain, "slot-drain", DefaultSlotDrain, "in a scheduled run, the `time` requests may run on after a level's duration before they are cut and the next slot begins")
}

// shardingFor turns the shard flags into the run's sharding (nil: a whole,
// unscheduled run). Every problem is a command-line error (exit 2), found
// before any traffic.
func shardingFor(env *Env, o *RunOptions, p *scenario.Plan, stages []*scenario.Stage) (*shard.Sharding, error) {
	part, given, err := shardPart(env, o)
	if err != nil {
		return nil, err
	}
	var at time.Time
	if o.StartAt != "" {
		if at, err = time.Parse(time.RFC3339Nano, o.StartAt); err != nil {
			return nil, exitcode.Errorf(exitcode.Invalid, "--start-at %q: not an RFC 3339 time (like 2026-01-02T15:04:05Z)", o.StartAt)
		}
		if ago := time.Since(at); ago > 0 {
			return nil, exitcode.Errorf(exitcode.Invalid, "--start-at %s passed %s ago: give every shard the same instant in the future (a shard started after it would run every level late)", o.StartAt, ago.Round(time.Millisecond))
		}
	}
	if !given && at.IsZero() {
		return nil, nil
	}
	sh, err := pipeline.Sharding(p, stages, part, at, o.SlotWarmup, o.SlotDrain)
	if err != nil {
		return nil, exitcode.With(err, exitcode.Invalid)
	}
	return sh, nil
}

// shardPart is --shard i/N, or --shards N with the index from the
// environment; given is false when neither flag was.
func shardPart(env *Env, o *RunOptions) (result.Shard, bool, error) {
	one := result.Shard{Index: 0, Count: 1}
	switch {
	case o.Shard != "" && o.Shards != 0:
		return one, false, exitcode.Errorf(exitcode.Invalid, "--shard and --shards: give one (--shards takes the index from $%s)", JobIndexEnv)
	case o.Shard != "":
		i, n, ok := strings.Cut(o.Shard, "/")
		idx, err1 := strconv.Atoi(i)
		count, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || count < 1 || count > shard.MaxShards || idx < 0 || idx >= count {
			return one, false, exitcode.Errorf(exitcode.Invalid, "--shard %q: want i/N with 0 ≤ i < N ≤ %d (like 0/4)", o.Shard, shard.MaxShards)
		}
		return result.Shard{Index: idx, Count: count}, true, nil
	case o.Shards != 0:
		if o.Shards < 1 || o.Shards > shard.MaxShards {
			return one, false, exitcode.Errorf(exitcode.Invalid, "--shards %d: want 1 to %d", o.Shards, shard.MaxShards)
		}
		v := env.lookup(JobIndexEnv)
		idx, err := strconv.Atoi(v)
		if v == "" || err != nil || idx < 0 || idx >= o.Shards {
			return one, false, exitcode.Errorf(exitcode.Invalid, "--shards %d: $%s is %q, want 0 to %d (it is set in a Kubernetes Indexed Job's pods; elsewhere use --shard i/N)", o.Shards, JobIndexEnv, v, o.Shards-1)
		}
		return result.Shard{Index: idx, Count: o.Shards}, true, nil
	}
	return one, false, nil
}
