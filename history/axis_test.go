package history

import (
	"strings"
	"testing"
	"time"
)

func texts(ts []tick) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Text)
	}
	return strings.Join(out, " ")
}

// TestValueTicks: round steps (1, 2 or 5 times a power of ten), the range
// widened to the outer ticks, percentages for fractions, and a flat series
// still gets an axis.
func TestValueTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi   float64
		percent  bool
		want     string
		from, to float64
	}{
		{93.2, 131.7, false, "90 100 110 120 130 140", 90, 140},
		{0.934, 1.37, false, "0.8 1.0 1.2 1.4", 0.8, 1.4},
		{1203, 1870, false, "1200 1400 1600 1800 2000", 1200, 2000},
		{0.0012, 0.0093, true, "0.0% 0.5% 1.0%", 0, 0.01},
		{-3.5, 2.2, false, "-4 -2 0 2 4", -4, 4},
	} {
		ts, from, to := valueTicks(c.lo, c.hi, 4, c.percent)
		if got := texts(ts); got != c.want || from != c.from || to != c.to {
			t.Errorf("valueTicks(%v, %v): %q over [%v, %v], want %q over [%v, %v]", c.lo, c.hi, got, from, to, c.want, c.from, c.to)
		}
	}
	if ts, from, to := valueTicks(100, 100, 4, false); len(ts) < 2 || !(from < 100 && to > 100) {
		t.Errorf("a flat series: ticks %q over [%v, %v]", texts(ts), from, to)
	}
	if ts, _, _ := valueTicks(0, 0, 4, false); texts(ts) != "-1.0 -0.5 0.0 0.5 1.0" {
		t.Errorf("a flat series at 0: ticks %q", texts(ts))
	}
}

// TestTimeTicks: dates on round days, weeks (Mondays), months or years as
// the span needs, hours within a day, never more than asked for.
func TestTimeTicks(t *testing.T) {
	d := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		from, to, want string
	}{
		{"2030-03-01 02:00", "2030-03-14 02:00", "2030-03-03 2030-03-05 2030-03-07 2030-03-09 2030-03-11 2030-03-13"},
		{"2030-03-01 02:00", "2030-05-20 02:00", "2030-03-11 2030-03-25 2030-04-08 2030-04-22 2030-05-06 2030-05-20"},
		{"2030-03-01 02:00", "2032-11-26 02:00", "2030-07 2031-01 2031-07 2032-01 2032-07"},
		{"2030-03-01 02:00", "2030-03-01 14:00", "03:00 06:00 09:00 12:00"},
		{"2030-03-01 20:00", "2030-03-02 08:00", "03-01 21:00 03-02 00:00 03-02 03:00 03-02 06:00"},
		{"2027-03-01 02:00", "2055-03-01 02:00", "2030 2035 2040 2045 2050 2055"},
	} {
		got := texts(timeTicks(d(c.from), d(c.to), 6))
		if got != c.want {
			t.Errorf("timeTicks(%s, %s) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}
