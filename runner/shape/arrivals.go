package shape

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Arrivals is an open loop's arrival process, as the open loop asks it:
// when is the next send? Like vegeta's Pacer, it never says what kind of
// process it is, so a new pattern (a ramp, a piecewise rate series) is a
// type in a file of its own and an entry in arrivalProcesses; the open loop,
// sharding and Schedule do not change.
type Arrivals interface {
	// Next returns the offset from the level's start at which the next
	// request is due (the first is usually 0, offsets never decrease), or
	// false when the process has no more arrivals.
	Next() (time.Duration, bool)
}

// Pace is what a seeded arrival process is drawn from.
type Pace struct {
	// Seed seeds the process's own stream of draws: the same Pace gives
	// the same offsets, call after call.
	Seed int64
	// Rate is the mean arrival rate, requests per second (> 0).
	Rate float64
	// Burstiness is the squared coefficient of variation of the gaps, for
	// a process that takes one (gamma); 0 means the process's own default.
	Burstiness float64
	// Series, when set, is the rate over the level's time the process
	// follows (arrival_series.go); Rate is then its mean.
	Series *result.Series
}

// arrivalProcesses are the plan's arrival processes (scenario.Arrivals) by
// name, each a pure function of its Pace in a file of its own
// (arrival_*.go). A test holds it to the plan's list.
var arrivalProcesses = map[scenario.Arrival]func(Pace) Arrivals{
	scenario.ArrivalPoisson:  newPoisson,
	scenario.ArrivalConstant: newConstant,
	scenario.ArrivalGamma:    newGamma,
}

// NewArrivals is the arrival process the plan names (the default, poisson,
// for ""), drawn at p. A name no process has (a plan built in code that
// the loader did not validate) gets the default.
func NewArrivals(kind scenario.Arrival, p Pace) Arrivals {
	newProcess, ok := arrivalProcesses[kind]
	if !ok {
		newProcess = newPoisson
	}
	if p.Series != nil {
		return newSeries(newProcess, p)
	}
	return newProcess(p)
}

// rng is a seeded process's stream of draws: a stream of its own (the second
// PCG word, "openloop"), so a schedule shares no draws with the prompt and
// length sampling.
func (p Pace) rng() *rand.Rand {
	return rand.New(rand.NewPCG(uint64(p.Seed), 0x6f70656e6c6f6f70))
}

// offset is t seconds as a Duration. A process accumulates its offsets in
// float64 seconds and converts each once, so rounding does not drift over a
// long level.
func offset(t float64) time.Duration {
	return time.Duration(math.Round(t * float64(time.Second)))
}

// recorded is a fixed schedule: a trace replay's send times, in order.
type recorded struct {
	times []time.Duration
	i     int
}

func (r *recorded) Next() (time.Duration, bool) {
	if r.i >= len(r.times) {
		return 0, false
	}
	r.i++
	return r.times[r.i-1], true
}

// partArrivals is arrivals phase, phase+stride, phase+2·stride, ... of the
// whole level's process: every shard draws the whole schedule (the draws
// are the schedule's meaning) and keeps its own.
type partArrivals struct {
	a             Arrivals
	stride, phase int
	started       bool
}

func (p *partArrivals) Next() (time.Duration, bool) {
	skip := p.stride - 1
	if !p.started {
		skip, p.started = p.phase, true
	}
	for range skip {
		if _, ok := p.a.Next(); !ok {
			return 0, false
		}
	}
	return p.a.Next()
}
