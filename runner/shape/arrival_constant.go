package shape

import "time"

// constant sends every 1/rate: arrival i is due at exactly i/rate.
type constant struct {
	rate float64
	i    int
}

func newConstant(p Pace) Arrivals { return &constant{rate: p.Rate} }

func (a *constant) Next() (time.Duration, bool) {
	i := a.i
	a.i++
	return offset(float64(i) / a.rate), true
}
