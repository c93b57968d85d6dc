package result

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Series is a load that changes over a level (a stage's series:): a rate
// (open loop, requests/s) or a concurrency (closed loop, streams) as a
// function of the time since the level's window opened, made of pieces one
// after another, each going from From to To over its length, linearly or
// exponentially (From = To: held). The engine sends by it, the slices say
// what it asked for over each of their windows, and its label names the
// level.
type Series struct {
	// Over is what the series sets: LoadRate or LoadConcurrency.
	Over LoadKind `json:"over"`
	// Shape is how the plan wrote it: linear, exponential, steps or pieces.
	Shape string `json:"shape"`
	// Pieces are its pieces, in order.
	Pieces []SeriesPiece `json:"pieces"`
}

// SeriesPiece is one piece of a Series: From to To over DurationS seconds,
// exponentially (From·(To/From)^(t/d)) when Exponential, else linearly.
type SeriesPiece struct {
	DurationS   float64 `json:"duration_s"`
	From        float64 `json:"from"`
	To          float64 `json:"to"`
	Exponential bool    `json:"exponential,omitempty"`
}

// Duration is the series' length: its pieces' lengths added up.
func (s *Series) Duration() time.Duration {
	total := 0.0
	for _, p := range s.Pieces {
		total += p.DurationS
	}
	return time.Duration(math.Round(total * float64(time.Second)))
}

// piece is the piece t seconds falls in and t from its start; false past
// the end.
func (s *Series) piece(t float64) (SeriesPiece, float64, bool) {
	for _, p := range s.Pieces {
		if t < p.DurationS {
			return p, t, true
		}
		t -= p.DurationS
	}
	return SeriesPiece{}, 0, false
}

// value is the piece's load t seconds into it.
func (p SeriesPiece) value(t float64) float64 {
	switch {
	case p.From == p.To || p.DurationS <= 0:
		return p.From
	case p.Exponential:
		return p.From * math.Pow(p.To/p.From, t/p.DurationS)
	}
	return p.From + (p.To-p.From)*t/p.DurationS
}

// integral is ∫ of the piece's load from 0 to t seconds into it.
func (p SeriesPiece) integral(t float64) float64 {
	switch {
	case p.From == p.To || p.DurationS <= 0:
		return p.From * t
	case p.Exponential:
		k := math.Log(p.To/p.From) / p.DurationS
		return p.From * (math.Exp(k*t) - 1) / k
	}
	return p.From*t + (p.To-p.From)*t*t/(2*p.DurationS)
}

// At is the load the series asks for at d from the window's opening (the
// last value past its end).
func (s *Series) At(d time.Duration) float64 {
	p, t, ok := s.piece(d.Seconds())
	if !ok {
		if n := len(s.Pieces); n > 0 {
			return s.Pieces[n-1].To
		}
		return 0
	}
	return p.value(t)
}

// Integral is ∫ of the load from the opening to d: for a rate series, the
// arrivals expected by then.
func (s *Series) Integral(d time.Duration) float64 {
	t, sum := d.Seconds(), 0.0
	for _, p := range s.Pieces {
		if t <= p.DurationS {
			return sum + p.integral(max(0, t))
		}
		sum += p.integral(p.DurationS)
		t -= p.DurationS
	}
	return sum
}

// Mean is the series' mean load over [a, b) (its value at a when b ≤ a).
func (s *Series) Mean(a, b time.Duration) float64 {
	if b <= a {
		return s.At(a)
	}
	return (s.Integral(b) - s.Integral(a)) / (b - a).Seconds()
}

// Peak is the most the series asks for.
func (s *Series) Peak() float64 {
	peak := 0.0
	for _, p := range s.Pieces {
		peak = max(peak, p.From, p.To)
	}
	return peak
}

// Inverse is the time at which the integral reaches x (for a rate series,
// when the x-th expected arrival is due), or false when it never does
// within the series. It is monotone in x, so a schedule drawn in expected
// arrivals keeps its order mapped onto the series' time.
func (s *Series) Inverse(x float64) (time.Duration, bool) {
	at := 0.0
	for i, p := range s.Pieces {
		whole := p.integral(p.DurationS)
		last := i == len(s.Pieces)-1
		if whole > 0 && (x <= whole || last && x <= whole*(1+1e-12)) { // the end, to rounding
			return secs(at + p.solve(min(x, whole))), true
		}
		x -= whole
		at += p.DurationS
	}
	return 0, false
}

// solve is the t within the piece at which its integral is x (0 ≤ x ≤ the
// whole piece's integral, which is > 0).
func (p SeriesPiece) solve(x float64) float64 {
	switch {
	case p.From == p.To:
		return x / p.From
	case p.Exponential:
		k := math.Log(p.To/p.From) / p.DurationS
		return math.Log(1+k*x/p.From) / k
	}
	// From·t + (To−From)·t²/(2d) = x: the root in [0, d].
	a := (p.To - p.From) / (2 * p.DurationS)
	disc := p.From*p.From + 4*a*x
	return min(p.DurationS, max(0, 2*x/(p.From+math.Sqrt(max(0, disc)))))
}

// First is the first time at or after d at which the series asks for at
// least x (a concurrency series: when stream x is wanted), or false when it
// never does again.
func (s *Series) First(x float64, d time.Duration) (time.Duration, bool) {
	at := 0.0
	t := d.Seconds()
	for _, p := range s.Pieces {
		end := at + p.DurationS
		if t < end {
			from := max(t, at) - at
			if p.value(from) >= x {
				return secs(at + from), true
			}
			if p.To >= x { // monotone within a piece: it crosses x inside
				return secs(at + p.cross(x)), true
			}
		}
		at = end
	}
	return 0, false
}

// cross is the t within a rising piece at which its load reaches x.
func (p SeriesPiece) cross(x float64) float64 {
	switch {
	case p.From == p.To:
		return 0
	case p.Exponential:
		return p.DurationS * math.Log(x/p.From) / math.Log(p.To/p.From)
	}
	return p.DurationS * (x - p.From) / (p.To - p.From)
}

func secs(t float64) time.Duration { return time.Duration(math.Ceil(t * float64(time.Second))) }

// Label names a series level: what it sets ("rate" or "c") and its shape
// with its numbers, as the plan wrote them: rate=linear(1,40,60s),
// c=steps(2,10,2,10s), rate=pieces(10s:2,20s:8).
func (s *Series) Label() string {
	name := "c="
	if s.Over == LoadRate {
		name = "rate="
	}
	n := func(v float64) string { return trimFloat(v) }
	d := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "s" }
	ps := s.Pieces
	if len(ps) == 0 {
		return name + s.Shape + "()"
	}
	switch s.Shape {
	case "linear", "exponential":
		return name + s.Shape + "(" + n(ps[0].From) + "," + n(ps[0].To) + "," + d(ps[0].DurationS) + ")"
	case "steps":
		step := 0.0
		if len(ps) > 1 {
			step = ps[1].From - ps[0].From
		}
		return name + "steps(" + n(ps[0].From) + "," + n(ps[len(ps)-1].From) + "," + n(step) + "," + d(ps[0].DurationS) + ")"
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = d(p.DurationS) + ":" + n(p.From)
		if p.To != p.From {
			parts[i] += ".." + n(p.To)
		}
	}
	return name + "pieces(" + strings.Join(parts, ",") + ")"
}
