// Package clock waits for instants: precisely (a timer with a timerfd alarm,
// then a short spin) for open-loop sends, plainly for everything else.
package clock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// An open-loop request is due at an instant its schedule fixes, and its
// dispatch lag (and its latency from the schedule) counts every microsecond
// it leaves late. A bare Go timer wakes up to about a millisecond late on
// Linux when the process is idle: the runtime's poller then sleeps in
// epoll_wait, whose timeout is whole milliseconds. And a goroutine that must
// do other work between sends (the dispatcher builds each request's body)
// falls behind whenever it queues behind the stream readers on a busy core.
//
// So the dispatcher only builds requests and hands each to a sender
// goroutine SendLead before it is due (senders, runner/shape/openloop.go), and the sender
// waits for the due time itself, in two steps:
//
//   - a Go timer until a margin before it, with an alarm (a timerfd in the
//     runtime's poller, alarm_linux.go) set for the same instant: its event
//     wakes an idle poller on time, and the woken runtime fires the timer. A
//     fired timer's goroutine runs next on its core, ahead of the stream
//     readers. Nothing holds a core while it waits;
//   - a busy loop on the monotonic clock for the rest: exact whatever the
//     wake-up's own lateness (a thread the kernel wakes from idle starts late
//     now and then, by up to a millisecond on a virtual machine whose idle
//     CPU the host put to sleep), and the only part that costs CPU.
//
// The margin is what this machine needs: the wake-ups' lateness at p99,
// learnt as the level goes (Spinner), plus spinSlack, at least spinMin and
// at most spinMax. It is also at most a quarter of the level's mean gap
// between requests, so spinning costs at most about a quarter of a core
// whatever the rate: a core spun away is taken from the stream readers (with
// GOMAXPROCS=1 they wait while a sender spins) and, on a shared machine,
// from the server. At high rates the process is seldom idle when a request
// falls due, so a short margin is then enough.
//
// The busy loop does not yield (runtime.Gosched): every yield would be a
// sample of the runtime's scheduling latency, and thousands of them a second
// would hide a starved client's real latencies (client_sched_p90_ms); and a
// yielded goroutine waits behind every runnable stream reader. It holds its
// core for at most the margin, which other goroutines see as that much
// scheduling latency on a single core (other cores take their work).
const (
	spinMax   = 2 * time.Millisecond
	spinMin   = 50 * time.Microsecond
	spinSlack = 50 * time.Microsecond
	SendLead  = 5 * time.Millisecond
)

// Spinner decides how long before each due time a level's senders start to
// spin, from how late their wake-ups have been.
type Spinner struct {
	limit  time.Duration // the most it may spin per request
	margin atomic.Int64  // ns

	mu   sync.Mutex
	late [256]time.Duration // the latest wake-ups' lateness, a ring
	n    int
}

// spinShare is the most of a core spinning may take: the share of the mean
// gap between requests a sender may spin.
const spinShare = 0.25

// NewSpinner is the Spinner of a level of rate requests/s on average (0:
// unknown).
func NewSpinner(rate float64) *Spinner {
	limit := spinMax
	if rate > 0 {
		limit = max(spinMin, min(spinMax, time.Duration(spinShare*float64(time.Second)/rate)))
	}
	s := &Spinner{limit: limit}
	s.margin.Store(int64(limit)) // spin long until there is something to learn from
	return s
}

// observe learns a wake-up's lateness; every 32 wake-ups the margin becomes
// the p99 of the last 256 plus spinSlack, within [spinMin, limit].
func (s *Spinner) observe(late time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.late[s.n%len(s.late)] = late
	s.n++
	if s.n < 64 || s.n%32 != 0 {
		return
	}
	window := slices.Clone(s.late[:min(s.n, len(s.late))])
	slices.Sort(window)
	p99 := window[len(window)*99/100]
	s.margin.Store(int64(max(spinMin, min(s.limit, p99+spinSlack))))
}

// Wait returns at due, or false as soon as ctx is done: a timer (with the
// alarm) until the margin before it, then a busy loop.
func (s *Spinner) Wait(ctx context.Context, due time.Time, a *Alarm) bool {
	if wake := due.Add(-time.Duration(s.margin.Load())); time.Until(wake) > 0 {
		a.Set(wake)
		if !SleepUntil(ctx, wake) {
			return false
		}
		s.observe(time.Since(wake))
	}
	for time.Now().Before(due) {
	}
	return ctx.Err() == nil
}

// Alarms lends alarms to the senders waiting at one time (a handful: those
// due within SendLead), so a level opens as many timerfds as it ever had
// senders waiting at once.
type Alarms struct {
	mu   sync.Mutex
	free []*Alarm
	all  []*Alarm
}

func (p *Alarms) Get() *Alarm {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		a := p.free[n-1]
		p.free = p.free[:n-1]
		return a
	}
	a := NewAlarm()
	p.all = append(p.all, a)
	return a
}

func (p *Alarms) Put(a *Alarm) {
	p.mu.Lock()
	p.free = append(p.free, a)
	p.mu.Unlock()
}

// Close releases every alarm; none may be in use.
func (p *Alarms) Close() {
	for _, a := range p.all {
		a.Close()
	}
}

// SleepUntil waits until t, or returns false as soon as ctx is done.
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
