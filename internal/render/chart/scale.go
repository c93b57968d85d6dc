package chart

import (
	"math"
	"strconv"
	"time"
)

// scale maps data values onto a pixel range, linearly or in log10.
type scale struct {
	lo, hi   float64 // data domain
	p0, p1   float64 // pixel range
	log      bool
	ticks    []float64
	tickText []string
}

func (s scale) at(v float64) float64 {
	if s.log {
		lv, llo, lhi := math.Log10(v), math.Log10(s.lo), math.Log10(s.hi)
		return s.p0 + (lv-llo)/(lhi-llo)*(s.p1-s.p0)
	}
	return s.p0 + (v-s.lo)/(s.hi-s.lo)*(s.p1-s.p0)
}

// niceNum rounds x to 1, 2, 5 or 10 times a power of ten (Heckbert, "Nice
// numbers for graph labels", Graphics Gems 1990): round picks the nearest,
// otherwise the smallest nice number >= x.
func niceNum(x float64, round bool) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	switch {
	case round && f < 1.5:
		nf = 1
	case round && f < 3:
		nf = 2
	case round && f < 7:
		nf = 5
	case round:
		nf = 10
	case f <= 1:
		nf = 1
	case f <= 2:
		nf = 2
	case f <= 5:
		nf = 5
	default:
		nf = 10
	}
	return nf * math.Pow(10, exp)
}

// linearScale builds a linear scale over [min, max] with about n nice ticks.
// A range of non-negative values starts at zero, so a height is read against
// a true origin: a bar's, a latency's, and a history's, where a change of
// 0.1% must not fill the chart.
func linearScale(min, max float64, n int, intTicks bool, p0, p1 float64) scale {
	if min > 0 {
		min = 0
	}
	if max <= min {
		max = min + math.Max(1, math.Abs(min)) // one value: give it room
	}
	step := niceNum((max-min)/float64(n-1), true)
	if intTicks && step < 1 {
		step = 1
	}
	lo := math.Floor(min/step) * step
	hi := math.Ceil(max/step) * step
	if !(step > 0) || !finite(step) || !finite(hi-lo) || !((hi-lo)/step <= 4*float64(n)) {
		// Absurd data (±1e308) must not loop or flood the axis: two ticks.
		return fixedScale(min, max, 1, p0, p1)
	}
	s := scale{lo: lo, hi: hi, p0: p0, p1: p1}
	// Decimals enough to tell adjacent ticks apart, no more.
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	// Count the ticks rather than step until past hi: at 1e308 adding a
	// step may not change the value at all.
	for i, n := 0, int(math.Round((hi-lo)/step)); i <= n; i++ {
		v := math.Round((lo+float64(i)*step)/step) * step // keep 0.30000000000000004 off the axis
		s.ticks = append(s.ticks, v)
		if math.Abs(v) >= 1e15 {
			s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 4, 64))
		} else {
			s.tickText = append(s.tickText, strconv.FormatFloat(v, 'f', dec, 64))
		}
	}
	return s
}

// logScale builds a log10 scale over [min, max] (both > 0). Integer axes
// (concurrency) get ticks on powers of two, the way sweeps are planned (1, 2,
// 4 ... 64); others get the 1-2-5 sequence. Either is thinned when it would
// crowd the axis.
func logScale(min, max float64, intTicks bool, p0, p1 float64) scale {
	if !(min >= 1e-300 && max <= 1e300 && max > min) {
		// Outside this the decade arithmetic under- or overflows.
		return linearScale(min, max, 6, intTicks, p0, p1)
	}
	if intTicks {
		return log2Scale(min, max, p0, p1)
	}
	lo := math.Pow(10, math.Floor(math.Log10(min)))
	for _, m := range []float64{5, 2} {
		if lo*m <= min {
			lo *= m
			break
		}
	}
	hi := math.Pow(10, math.Ceil(math.Log10(max)))
	for _, m := range []float64{0.2, 0.5} {
		if hi*m >= max {
			hi *= m
			break
		}
	}
	s := scale{lo: lo, hi: hi, p0: p0, p1: p1, log: true}
	var ticks []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				ticks = append(ticks, v)
			}
		}
	}
	if len(ticks) > 10 {
		var decades []float64
		for _, v := range ticks {
			if m := v / math.Pow(10, math.Floor(math.Log10(v)+1e-9)); math.Abs(m-1) < 1e-9 {
				decades = append(decades, v)
			}
		}
		if len(decades) >= 2 {
			ticks = decades
		}
	}
	for k := (len(ticks) + 9) / 10; k > 1 && len(ticks) > 10; {
		// Still crowded (tens of decades): keep every k-th.
		var thin []float64
		for i := 0; i < len(ticks); i += k {
			thin = append(thin, ticks[i])
		}
		ticks = thin
	}
	for _, v := range ticks {
		s.ticks = append(s.ticks, v)
		s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 4, 64))
	}
	return s
}

// log2Scale is a log scale from the power of two at or below min to the one at
// or above max, with a tick on every power of two (every 2nd, 4th ... when
// there would be more than 10).
func log2Scale(min, max float64, p0, p1 float64) scale {
	e0 := math.Floor(math.Log2(min))
	e1 := math.Ceil(math.Log2(max))
	if e1 <= e0 {
		e1 = e0 + 1
	}
	step := 1.0
	for (e1-e0)/step > 10 {
		step *= 2
	}
	s := scale{lo: math.Exp2(e0), hi: math.Exp2(e1), p0: p0, p1: p1, log: true}
	for e := e0; e <= e1; e += step {
		v := math.Exp2(e)
		s.ticks = append(s.ticks, v)
		s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 6, 64))
	}
	return s
}

// fixedScale is a linear scale with a known domain and n equal steps
// (percentages: 0, 20, ... 100).
func fixedScale(lo, hi float64, n int, p0, p1 float64) scale {
	s := scale{lo: lo, hi: hi, p0: p0, p1: p1}
	for i := 0; i <= n; i++ {
		v := lo + (hi-lo)*float64(i)/float64(n)
		s.ticks = append(s.ticks, v)
		s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 6, 64))
	}
	return s
}

// timeScale is a linear scale over Unix seconds with ticks on round times
// (UTC). A single instant is given a day around it.
func timeScale(min, max float64, n int, p0, p1 float64) scale {
	if !(max > min) {
		min, max = min-12*3600, max+12*3600
	}
	s := scale{lo: min, hi: max, p0: p0, p1: p1}
	from, to := fromUnix(min), fromUnix(max)
	if !finite(min) || !finite(max) || to.Sub(from) <= 0 {
		return fixedScale(min, max, 1, p0, p1)
	}
	for _, t := range timeTicks(from, to, n) {
		s.ticks = append(s.ticks, t.at)
		s.tickText = append(s.tickText, t.text)
	}
	return s
}

// tick is one labelled position on a time axis.
type tick struct {
	at   float64 // Unix seconds
	text string
}

// timeSteps are the time axis' candidate steps, smallest first; a month
// or a year is a calendar step (months 1, 3, 6; years 1, 2, 5, 10 ...).
var timeSteps = []time.Duration{
	time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour,
}

// timeTicks are at most n ticks on round times (UTC) within [from, to]:
// minutes and hours labelled 15:04 (with the day where the span has more
// than one), days 2006-01-02, months 2006-01, years 2006.
func timeTicks(from, to time.Time, n int) []tick {
	from, to = from.UTC(), to.UTC()
	span := to.Sub(from)
	if span <= 0 {
		return []tick{{Unix(from), from.Format("2006-01-02 15:04")}}
	}
	for _, step := range timeSteps {
		if span/step > time.Duration(n) {
			continue
		}
		layout := "2006-01-02"
		if step < 24*time.Hour {
			layout = "15:04"
			if from.YearDay() != to.YearDay() || from.Year() != to.Year() {
				layout = "01-02 15:04"
			}
		}
		var out []tick
		t := from.Truncate(step) // multiples of step since the zero time, a UTC midnight
		if step == 7*24*time.Hour || step == 14*24*time.Hour {
			// Weeks start on a Monday.
			t = time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
			t = t.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7))
		}
		for ; !t.After(to); t = t.Add(step) {
			if !t.Before(from) {
				out = append(out, tick{Unix(t), t.Format(layout)})
			}
		}
		if len(out) < 2 { // runs within a minute or so: their own times
			out = []tick{{Unix(from), from.Format("15:04:05")}, {Unix(to), to.Format("15:04:05")}}
		}
		return out
	}
	for _, months := range []int{1, 3, 6} {
		if span.Hours()/24/30.44/float64(months) <= float64(n) {
			return calendarTicks(from, to, 0, months, "2006-01")
		}
	}
	years := 1
	for span.Hours()/24/365.25/float64(years) > float64(n) {
		years = int(niceNum(float64(years)+1, false))
	}
	return calendarTicks(from, to, years, 0, "2006")
}

// calendarTicks are the first days of every months-th month (or of every
// years-th year) from from to to.
func calendarTicks(from, to time.Time, years, months int, layout string) []tick {
	t := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	if years > 0 {
		t = time.Date(from.Year()/years*years, 1, 1, 0, 0, 0, 0, time.UTC)
	} else {
		t = t.AddDate(0, -((int(t.Month()) - 1) % months), 0)
	}
	var out []tick
	for ; !t.After(to); t = t.AddDate(years, months, 0) {
		if !t.Before(from) {
			out = append(out, tick{Unix(t), t.Format(layout)})
		}
	}
	return out
}

// Unix is t as the seconds a time axis reads (its X values).
func Unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func fromUnix(sec float64) time.Time {
	whole := math.Floor(sec)
	return time.Unix(int64(whole), int64((sec-whole)*1e9)).UTC()
}

// extent returns the min and max of the finite values, and whether there was any.
func extent(vals []float64) (min, max float64, ok bool) {
	min, max = math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		min, max, ok = math.Min(min, v), math.Max(max, v), true
	}
	return min, max, ok
}

// Finite reports whether v is a number a chart can place (not NaN, not ±Inf).
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func finite(v float64) bool { return Finite(v) }
