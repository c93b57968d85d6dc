package runner

import (
	"time"

	"github.com/runnerbench/runner/result"
)

// A level's token gaps and stamps: each worker's batch (the wire hands it
// every gap, and how every token chunk was timed, as the stream is read),
// folded into the level's ITL, its slices, its stamps and the live export,
// and the progress line's live medians.

// itlBatch is a worker's buffer of inter-token gaps and read lags: the
// per-token path writes into it without a lock, and it folds into the
// level's ITL and stamps under the level's lock once per batchSize of
// either, so a worker's memory stays a few KiB however many tokens there
// are.
type itlBatch struct {
	lr   *LevelRun
	n    int
	live int // buf[:live] is counted in the level's live ITL already
	buf  [batchSize]time.Duration
	// at is when each gap's token arrived, kept only when the level is
	// sliced (nil otherwise).
	at *[batchSize]time.Time
	// The token chunks' stamps since the last fold: the read lags of the
	// kernel-timed ones, and the counts.
	nLag                 int
	lags                 [batchSize]time.Duration
	kernel, user, shared int64
}

// batchSize is how many gaps (or read lags) a worker holds before folding
// them into its level: a lock taken once per that many tokens. Small,
// because a worker is kept per stream: at 16,384 streams each KiB here is
// 16 MiB.
const batchSize = 32

// Gap records one gap, whose token arrived at now (wire.Gaps). It does not
// allocate.
func (b *itlBatch) Gap(gap time.Duration, now time.Time) {
	b.buf[b.n] = gap
	if b.at != nil {
		b.at[b.n] = now
	}
	b.n++
	if b.n == batchSize {
		b.flush()
	}
}

// Stamp counts how a token chunk was timed, and its read lag when the
// kernel timed it (wire.Gaps). It does not allocate.
func (b *itlBatch) Stamp(kernel bool, lag time.Duration) {
	if !kernel {
		b.user++
		return
	}
	b.kernel++
	b.lags[b.nLag] = lag
	b.nLag++
	if b.nLag == batchSize {
		b.flush()
	}
}

// Shared counts a token chunk that came in one read with the next (wire.Gaps).
func (b *itlBatch) Shared() { b.shared++ }

// flush folds the buffered gaps and stamps into the level.
func (b *itlBatch) flush() {
	if b == nil || b.n == 0 && b.kernel+b.user == 0 {
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
	st := &b.lr.stamps
	st.Kernel, st.User, st.Shared = st.Kernel+b.kernel, st.User+b.user, st.Shared+b.shared
	for _, l := range b.lags[:b.nLag] {
		st.Lag.Add(l)
	}
	b.lr.itlMu.Unlock()
	b.nLag, b.kernel, b.user, b.shared = 0, 0, 0, 0
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
