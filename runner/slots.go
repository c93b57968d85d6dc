package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/runnerbench/runner/runner/clock"
	"github.com/runnerbench/runner/runner/shape"
	"github.com/runnerbench/runner/runner/shard"
	"github.com/runnerbench/runner/runner/synth"
)

// shardNonces is this engine's nonce generator: a random key for a whole run;
// for a shard, the key every shard of the run derives from Key and the
// endpoint, with the counter n·N+i, so two shards never make the same nonce.
func shardNonces(s *shard.Sharding, endpoint string) *synth.Nonces {
	if !s.Sharded() {
		return synth.NewNonces()
	}
	sum := sha256.Sum256([]byte("runner nonces\x00" + s.Key + "\x00" + endpoint))
	return synth.KeyedNonces(binary.LittleEndian.Uint64(sum[:8]), s.Part.Count, s.Part.Index)
}

// shardIndex is the index records of this engine's requests carry (0 for a
// whole run).
func (e *Engine) shardIndex() int {
	if s := e.opts.Sharding; s.Sharded() {
		return s.Part.Index
	}
	return 0
}

// slotBegins skips a level of which this shard has no part (logged: the
// level's records still say so), and waits for a scheduled level's slot to
// begin. False: nothing of the level to send.
func (e *Engine) slotBegins(ctx context.Context, lvl shape.Level) bool {
	if p := lvl.Part; p != nil && p.Empty {
		e.log.Warn().Str("level_label", lvl.Spec.Label).Int("shard", p.Shard.Index).Int("shards", p.Shard.Count).
			Msg("this shard's part of the level is empty (fewer streams, requests or arrivals than shards): level skipped")
		return false
	}
	if s := lvl.Slot; s != nil {
		clock.SleepUntil(ctx, s.Start)
	}
	return true
}

// openLead is how long before a scheduled window opens a shard reads the
// server's counters and prepares its first requests: late enough that the
// other shards' warm-ups (done within the allowance) are outside the
// counters' window, early enough for the reads to be done when it opens (a
// preparation that takes longer shows as LateStartMs).
const openLead = 100 * time.Millisecond

// nearOpen waits, after a scheduled level's warm-ups, until openLead before
// its window opens.
func nearOpen(ctx context.Context, lvl shape.Level) {
	if s := lvl.Slot; s != nil {
		clock.SleepUntil(ctx, s.Open.Add(-openLead))
	}
}

// atSlotEnd waits, after a scheduled level's window, until its slot ends,
// when every shard's requests of the level have finished or been cut: the
// server's counters read then cover the whole level's load on the shared
// server, whichever shard's reads the merge keeps (the next slot's
// warm-ups begin only then).
func atSlotEnd(ctx context.Context, lvl shape.Level) {
	if s := lvl.Slot; s != nil {
		clock.SleepUntil(ctx, s.End)
	}
}
