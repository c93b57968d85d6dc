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

	inFlight, peak atomic.Int64
}

type fakeSend struct {
	seq     int
	due, at time.Time
}

func (f *fakeRun) Claim() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n >= f.total {
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
