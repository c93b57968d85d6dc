package history

import (
	"math"
	"strconv"
	"time"
)

// tick is one labelled position on an axis.
type tick struct {
	At   float64 // in the axis' own units (a value, or Unix seconds)
	Text string
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten (Heckbert, "Nice
// numbers for graph labels", Graphics Gems, 1990).
func niceStep(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5, 10} {
		if x <= f*p*(1+1e-9) {
			return f * p
		}
	}
	return 10 * p
}

// valueTicks are round ticks covering [lo, hi], about n of them (at most
// 2n), and the range widened to the outer ticks, so the axis starts and
// ends on a labelled value. A history's axis does not start at zero: the
// change between runs is what it shows. percent labels a fraction as a
// percentage (0.021 as 2.1%).
func valueTicks(lo, hi float64, n int, percent bool) (ticks []tick, from, to float64) {
	if !(hi > lo) { // a flat series: ±5% around it, or ±1 (1%) around 0
		d := math.Abs(lo) * 0.05
		if d == 0 && percent {
			d = 0.01
		} else if d == 0 {
			d = 1
		}
		lo, hi = lo-d, hi+d
	}
	step := niceStep((hi - lo) / float64(n))
	i0, i1 := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	k := int(i1 - i0)
	from, to = i0*step, i1*step
	if k < 1 || k > 4*n || math.IsInf(to-from, 0) {
		return []tick{{lo, fmtValue(lo, 0, percent)}, {hi, fmtValue(hi, 0, percent)}}, lo, hi
	}
	unit := step
	if percent {
		unit *= 100
	}
	dec := 0
	if unit < 1 {
		dec = int(math.Ceil(-math.Log10(unit) - 1e-9))
	}
	for i := 0; i <= k; i++ {
		v := (i0 + float64(i)) * step
		if step < 1 { // 0.30000000000000004 is 3/10, not 3·0.1
			v = (i0 + float64(i)) / math.Round(1/step)
		}
		ticks = append(ticks, tick{v, fmtValue(v, dec, percent)})
	}
	from, to = ticks[0].At, ticks[len(ticks)-1].At
	return ticks, from, to
}

func fmtValue(v float64, dec int, percent bool) string {
	if percent {
		return strconv.FormatFloat(v*100, 'f', dec, 64) + "%"
	}
	if math.Abs(v) >= 1e9 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
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
		return []tick{{unix(from), from.Format("2006-01-02 15:04")}}
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
				out = append(out, tick{unix(t), t.Format(layout)})
			}
		}
		if len(out) < 2 { // runs within a minute or so: their own times
			out = []tick{{unix(from), from.Format("15:04:05")}, {unix(to), to.Format("15:04:05")}}
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
		years = int(niceStep(float64(years) + 1))
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
			out = append(out, tick{unix(t), t.Format(layout)})
		}
	}
	return out
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
