package runner

import (
	"time"

	"github.com/runnerbench/runner/result"
)

// A level's token gaps: each worker's batch (the wire hands it every gap
// as the stream is read), folded into the level's ITL, its slices and the
// live export, and the progress line's live medians.

// itlBatch is a worker's buffer of inter-token gaps: the per-token path
// writes into it without a lock, and it folds into the level's ITL under the
// level's lock once per itlBatchSize gaps, so a worker's memory stays a few
// KiB however many tokens there are.
type itlBatch struct {
	lr   *LevelRun
	n    int
	live int // buf[:live] is counted in the level's live ITL already
	buf  [itlBatchSize]time.Duration
	// at is when each gap's token arrived, kept only when the level is
	// sliced (nil otherwise).
	at *[itlBatchSize]time.Time
}

const itlBatchSize = 256

// Gap records one gap, whose token arrived at now (wire.Gaps). It does not
// allocate.
func (b *itlBatch) Gap(gap time.Duration, now time.Time) {
	b.buf[b.n] = gap
	if b.at != nil {
		b.at[b.n] = now
	}
	b.n++
	if b.n == itlBatchSize {
		b.flush()
	}
}

// flush folds the buffered gaps into the level.
func (b *itlBatch) flush() {
	if b == nil || b.n == 0 {
		return
	}
	b.toLive()
	b.lr.itlMu.Lock()
	for _, g := range b.buf[:b.n] {
		b.lr.itl.Add(g)
	}
	if b.at != nil {
		b.lr.addSliced(b.buf[:b.n], b.at[:b.n])
	}
	b.lr.itlMu.Unlock()
	if f := b.lr.e.opts.OnGaps; f != nil {
		f(b.buf[:b.n])
	}
	b.n, b.live = 0, 0
}

// toLive counts the gaps buffered since the last call in the level's live ITL.
func (b *itlBatch) toLive() {
	for _, g := range b.buf[b.live:b.n] {
		b.lr.itlLive.add(g)
	}
	b.live = b.n
}

// live counts a finished request's TTFT and token gaps toward the progress
// line's medians: on the worker, after its stream, off the token path.
func (lr *LevelRun) live(w *worker, rec *result.Request) {
	if rec.OK && rec.TTFTMs != nil {
		lr.ttftLive.add(time.Duration(*rec.TTFTMs * float64(time.Millisecond)))
	}
	w.itl.toLive()
}

// addSliced adds gaps to the level's slices by their tokens' arrival, from
// the level's opening (under itlMu). A gap past result.MaxITLSlices slices
// is counted in the level's ITL only.
func (lr *LevelRun) addSliced(gaps []time.Duration, at []time.Time) {
	w := time.Duration(lr.lvl.Spec.SliceNs)
	for i, g := range gaps {
		k := 0
		if d := at[i].Sub(lr.origin); d > 0 {
			k = int(d / w)
		}
		if k >= result.MaxITLSlices {
			continue
		}
		for len(lr.itlSlices) <= k {
			lr.itlSlices = append(lr.itlSlices, result.ITL{})
		}
		lr.itlSlices[k].Add(g)
	}
}
