package shape

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// fakeRun is a level in progress without an engine: each send takes work
// and is logged with when it was due and when it went out. It tests what a
// Dispatcher decides alone (when requests go out, how many at once); the
// engine's own tests run the shapes over loopback HTTP.
type fakeRun struct {
	lvl   Level
	total int
	work  time.Duration

	mu    sync.Mutex
	n     int
	start time.Time
	sends []fakeSend

	inFlight, peak, unsent atomic.Int64
}

type fakeSend struct {
	seq     int
	due, at time.Time
}

func (f *fakeRun) Claim() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n >= f.total || (f.lvl.Duration > 0 && !f.start.IsZero() && time.Since(f.start) >= f.lvl.Duration) {
		return 0, false
	}
	f.n++
	return f.n - 1, true
}

func (f *fakeRun) Prepare(seq int) Prepared { return seq }
func (f *fakeRun) NewWorker() Worker        { return nil }
func (f *fakeRun) Begin()                   { f.mu.Lock(); f.start = time.Now(); f.mu.Unlock() }
func (f *fakeRun) Level() Level             { return f.lvl }
func (f *fakeRun) CapWaited()               {}
func (f *fakeRun) Unsent(n int)             { f.unsent.Add(int64(n)) }
func (f *fakeRun) CoarseSends() bool        { return false }

func (f *fakeRun) Start() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.start
}

func (f *fakeRun) Send(ctx context.Context, _ Worker, p Prepared, due time.Time) {
	n := f.inFlight.Add(1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	f.mu.Lock()
	f.sends = append(f.sends, fakeSend{seq: p.(int), due: due, at: time.Now()})
	f.mu.Unlock()
	select {
	case <-time.After(f.work):
	case <-ctx.Done():
	}
	f.inFlight.Add(-1)
}

// TestOpenLoopPendingIsNotInFlight: the bound on requests built ahead of
// their due time does not bound requests in flight (that would be
// coordinated omission): with room for 2 pending, 20 requests of 100 ms
// due every 5 ms overlap, each due on schedule.
func TestOpenLoopPendingIsNotInFlight(t *testing.T) {
	defer func(n int) { maxPending = n }(maxPending)
	maxPending = 2
	rate := 200.0
	run := &fakeRun{total: 20, work: 100 * time.Millisecond,
		lvl: Level{Spec: result.LevelSpec{Rate: &rate}, Requests: 20}}
	Open(rate, "constant", 0, 1, 0).Dispatch(context.Background(), run)
	if len(run.sends) != 20 {
		t.Fatalf("%d requests sent, want 20", len(run.sends))
	}
	if n := run.peak.Load(); n < 10 {
		t.Fatalf("at most %d requests in flight: the pending bound held sends back", n)
	}
	for _, s := range run.sends {
		if want := run.start.Add(time.Duration(s.seq) * 5 * time.Millisecond); !s.due.Equal(want) {
			t.Fatalf("request %d due at %v, want %v", s.seq, s.due.Sub(run.start), want.Sub(run.start))
		}
		if s.at.Before(s.due) {
			t.Fatalf("request %d went out %v before it was due", s.seq, s.due.Sub(s.at))
		}
	}
}

// TestOpenLoopUnsent: a level whose duration ends while its dispatcher is
// behind its schedule counts the arrivals due before the end that it never
// sent, so sent and unsent make the schedule exactly. With room for 2
// pending and a cap of 1, 100 ms requests due every 5 ms hold the
// dispatcher back from the first: of the 300 ms schedule's 60 arrivals it
// sends a handful on any machine (a busy one fewer). A light level (1 ms
// requests) sends its 10 unless a busy machine holds the dispatcher past
// the end, and then counts what it missed all the same.
func TestOpenLoopUnsent(t *testing.T) {
	defer func(n int) { maxPending = n }(maxPending)
	maxPending = 2
	rate := 200.0
	for _, tc := range []struct {
		name      string
		dur, work time.Duration
		cap, n    int
		behind    bool // the dispatcher must fall behind
	}{
		{"held back by the cap", 300 * time.Millisecond, 100 * time.Millisecond, 1, 60, true},
		{"light", 50 * time.Millisecond, time.Millisecond, 0, 10, false},
	} {
		run := &fakeRun{total: 1 << 30, work: tc.work, lvl: Level{Spec: result.LevelSpec{Rate: &rate}, Duration: tc.dur}}
		Open(rate, "constant", 0, 1, tc.cap).Dispatch(context.Background(), run)
		sched := Schedule(1, rate, "constant", 0, 0, tc.dur)
		sent, unsent := len(run.sends), int(run.unsent.Load())
		if len(sched) != tc.n || sent == 0 || sent+unsent != len(sched) || tc.behind && unsent == 0 {
			t.Errorf("%s: sent %d, unsent %d: the schedule holds %d before %v", tc.name, sent, unsent, len(sched), tc.dur)
		}
		t.Logf("%s: sent %d, unsent %d of %d", tc.name, sent, unsent, len(sched))
	}
}
