package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// xmlWellFormed reports whether b parses as XML: a check that the hand-built
// SVG escapes its text and attributes.
func xmlWellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestNiceNum(t *testing.T) {
	for _, tc := range []struct {
		x     float64
		round bool
		want  float64
	}{
		{1, true, 1}, {1.4, true, 1}, {1.6, true, 2}, {2.9, true, 2}, {3.1, true, 5}, {7.5, true, 10},
		{0.034, true, 0.05}, {1234, false, 2000}, {1000, false, 1000}, {4.2, false, 5}, {0.11, false, 0.2},
	} {
		if got := niceNum(tc.x, tc.round); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("niceNum(%v, %v) = %v, want %v", tc.x, tc.round, got, tc.want)
		}
	}
}

func TestLinearScaleTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		intTicks bool
		want     string
	}{
		{0, 1217.83, false, "0 200 400 600 800 1000 1200 1400"},
		{38.2, 205.4, false, "0 50 100 150 200 250"},
		{1, 4, true, "0 1 2 3 4"},
		{0, 0.3, false, "0.00 0.05 0.10 0.15 0.20 0.25 0.30"},
		{5, 5, false, "0 1 2 3 4 5"}, // one value: the axis still starts at zero
		{-3, 7, false, "-4 -2 0 2 4 6 8"},
	} {
		s := linearScale(tc.min, tc.max, 6, tc.intTicks, 0, 100)
		if got := strings.Join(s.tickText, " "); got != tc.want {
			t.Errorf("linearScale(%v, %v) ticks = %q, want %q", tc.min, tc.max, got, tc.want)
		}
		if s.lo > tc.min || s.hi < tc.max {
			t.Errorf("linearScale(%v, %v) domain [%v, %v] does not cover the data", tc.min, tc.max, s.lo, s.hi)
		}
		if s.at(s.lo) != 0 || s.at(s.hi) != 100 {
			t.Errorf("scale ends map to %v, %v", s.at(s.lo), s.at(s.hi))
		}
	}
}

func TestLogScaleTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		intTicks bool
		want     string
	}{
		{1, 64, true, "1 2 4 8 16 32 64"},
		{3, 48, true, "2 4 8 16 32 64"},
		{1, 4096, true, "1 4 16 64 256 1024 4096"}, // 13 powers of two: every other one
		{2, 16, false, "2 5 10 20"},
		{15, 5000, false, "10 20 50 100 200 500 1000 2000 5000"},
		{1, 100000, false, "1 10 100 1000 1e+04 1e+05"}, // many decades: thinned to powers of ten
	} {
		s := logScale(tc.min, tc.max, tc.intTicks, 0, 100)
		if got := strings.Join(s.tickText, " "); got != tc.want {
			t.Errorf("logScale(%v, %v) ticks = %q, want %q", tc.min, tc.max, got, tc.want)
		}
		if s.lo > tc.min || s.hi < tc.max {
			t.Errorf("logScale(%v, %v) domain [%v, %v] does not cover the data", tc.min, tc.max, s.lo, s.hi)
		}
		// Log spacing: the geometric mean of the ends sits mid-axis.
		if mid := s.at(math.Sqrt(s.lo * s.hi)); math.Abs(mid-50) > 1e-9 {
			t.Errorf("logScale(%v, %v): geometric mean at %v, want 50", tc.min, tc.max, mid)
		}
	}
}

// TestScalesSurviveExtremes: absurd values (a corrupt report) must not loop
// forever or flood the axis with ticks.
func TestScalesSurviveExtremes(t *testing.T) {
	for _, tc := range [][2]float64{
		{5e-324, 1}, {0, 5e-324}, {-1.7e308, 1.7e308}, {1, 1.7e308}, {1e-320, 1e300}, {3, 3},
		{-1e308, -1e308}, {1e308, 1e308}, // found by FuzzWrite: min+1 == min at this size
	} {
		for _, intTicks := range []bool{false, true} {
			ls := linearScale(tc[0], tc[1], 6, intTicks, 0, 100)
			if n := len(ls.ticks); n < 2 || n > 24 {
				t.Errorf("linearScale(%v, %v): %d ticks", tc[0], tc[1], n)
			}
			if tc[0] > 0 {
				gs := logScale(tc[0], tc[1], intTicks, 0, 100)
				if n := len(gs.ticks); n < 2 || n > 24 {
					t.Errorf("logScale(%v, %v, %v): %d ticks", tc[0], tc[1], intTicks, n)
				}
			}
			ts := timeScale(tc[0], tc[1], 6, 0, 100)
			if n := len(ts.ticks); n < 1 || n > 24 {
				t.Errorf("timeScale(%v, %v): %d ticks", tc[0], tc[1], n)
			}
		}
	}
}

func line(xs ...float64) Line {
	s := Series{Name: "s"}
	for _, x := range xs {
		s.Points = append(s.Points, Point{X: x, Y: F(x)})
	}
	return Line{ID: "t", Title: "t", X: Axis{Label: "concurrency", Scale: LogAuto, Ints: true}, Y: Axis{Label: "y"}, Series: []Series{s}}
}

func TestLoadAxisLogOnlyFromEightfoldSpan(t *testing.T) {
	if out := string(line(1, 2, 4, 8).SVG()); !strings.Contains(out, "(log scale)") {
		t.Error("1..8 (8x): want a log axis")
	}
	if out := string(line(1, 2, 4, 7).SVG()); strings.Contains(out, "(log scale)") {
		t.Error("1..7 (<8x): want a linear axis")
	}
	c := line(1, 2, 4, 8)
	c.X.Scale = Linear
	if out := string(c.SVG()); strings.Contains(out, "(log scale)") {
		t.Error("a linear axis drawn in log scale")
	}
}

func TestNullsAreGapsNotZeros(t *testing.T) {
	c := Line{ID: "t", X: Axis{Label: "x"}, Y: Axis{Label: "y"}, Series: []Series{{Name: "s", Points: []Point{
		{X: 1, Y: F(10)}, {X: 2, Y: F(12)}, {X: 3, Y: nil}, {X: 4, Y: F(15)}, {X: 5, Y: F(16)}, {X: 6, Y: F(math.NaN())}, {X: 7, Y: F(3)},
	}}}}
	out := []byte(c.SVG())
	if err := xmlWellFormed(out); err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if n := strings.Count(s, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want 2 (split at the null; the lone last point has no line)", n)
	}
	if n := strings.Count(s, "<circle"); n != 5 {
		t.Errorf("%d markers, want 5 (one per finite value)", n)
	}
	if strings.Contains(s, `data-y="0"`) {
		t.Error("a null was drawn as zero")
	}
}

func TestEmptyChartSaysNoData(t *testing.T) {
	c := Line{ID: "t", Series: []Series{{Name: "s", Points: []Point{{X: 1}, {X: 2}}}}}
	if s := string(c.SVG()); !strings.Contains(s, "no data") || strings.Contains(s, "<circle") {
		t.Errorf("all-null chart: %s", s)
	}
	if s := string((Bars{ID: "b"}).SVG()); !strings.Contains(s, "no data") {
		t.Errorf("empty bar chart: %s", s)
	}
}

func TestBarsStack(t *testing.T) {
	c := Bars{ID: "b", Categories: []string{"c=1", "c=2"}, Stacks: []Stack{
		{Name: "a", Values: []float64{3, 0}}, {Name: "b", Color: 1, Values: []float64{1, 4}},
	}}
	s := string(c.SVG())
	if err := xmlWellFormed([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s, "<rect x="); n != 3 {
		t.Errorf("%d bar segments, want 3 (no segment for a zero)", n)
	}
	// The y axis covers the tallest stack (4), on integer ticks.
	if !strings.Contains(s, `>4</text>`) || strings.Contains(s, `>0.5</text>`) {
		t.Error("count axis: want integer ticks up to 4")
	}
	if l := string(c.Legend()); strings.Count(l, "<rect") != 2 || !strings.Contains(l, ">b</span>") {
		t.Errorf("bar legend: %s", l)
	}
}

func TestEscapeInSVG(t *testing.T) {
	c := Line{ID: `a"b`, Title: `t<&>`, X: Axis{Label: "<x>"}, Y: Axis{Label: "y & z"}, TipAttr: true, Guide: []XY{{1, 1}, {2, 2}},
		Marks: []Mark{{X: 1, Label: "<m>"}}, Bands: []Band{{X0: 1, X1: 2, Label: "<b>"}},
		Series: []Series{{Name: `<s>"`, Points: []Point{{X: 1, Y: F(1), Tip: "</title><script>", Class: `"x`}}}}}
	out := []byte(c.SVG())
	if err := xmlWellFormed(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, raw := range []string{"<script>", "<x>", "<m>", "<b>", `<s>`} {
		if bytes.Contains(out, []byte(raw)) || strings.Contains(string(c.Legend()), raw) {
			t.Errorf("unescaped %s in %s", raw, out)
		}
	}
}

// TestMsTicks: a latency axis reads in the unit that keeps it short.
func TestMsTicks(t *testing.T) {
	if got := MsText(0.1) + "," + MsText(1500) + "," + MsText(90_000); got != "0.1 ms,1.5 s,1.5 min" {
		t.Errorf("MsText: %s", got)
	}
	c := Line{ID: "d", X: Axis{Label: "TTFT", Scale: Log, Ms: true}, Y: Axis{Label: "%", Max: 100},
		Series: []Series{{Name: "s", Points: []Point{{X: 0.1, Y: F(1)}, {X: 1000, Y: F(100)}}}}}
	out := string(c.SVG())
	for _, tick := range []string{">0.1 ms<", ">1 s<", ">100<"} {
		if !strings.Contains(out, tick) {
			t.Errorf("no tick %s in %s", tick, out)
		}
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
		var got []string
		for _, tk := range timeTicks(d(c.from), d(c.to), 6) {
			got = append(got, tk.text)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("timeTicks(%s, %s) = %q, want %q", c.from, c.to, strings.Join(got, " "), c.want)
		}
	}
}

// TestIntervalsAndMarkedPoints: an interval is a bar from its low to its
// high end, which the value axis covers; a marked point is drawn larger
// with its class; the hover text is in data-tip only when asked for.
func TestIntervalsAndMarkedPoints(t *testing.T) {
	day := func(i int) float64 { return Unix(time.Date(2030, 3, 1+i, 2, 0, 0, 0, time.UTC)) }
	c := Line{ID: "h", Wide: true, X: Axis{Label: "run", Scale: Time}, Y: Axis{Label: "ms"}, Series: []Series{{Name: "v", Points: []Point{
		{X: day(0), Y: F(100), Tip: "a"}, {X: day(1), Y: F(100), Lo: F(40), Hi: F(260), Tip: "b"}, {X: day(2), Y: F(130), Class: "worse", Tip: "c"},
	}}}}
	out := string(c.SVG())
	if err := xmlWellFormed([]byte(out)); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<line class="interval" x1="[\d.]+" y1="([\d.]+)" x2="[\d.]+" y2="([\d.]+)" data-lo="40" data-hi="260"/>`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no interval bar from 40 to 260: %s", out)
	}
	if !strings.Contains(out, `>300</text>`) {
		t.Errorf("the value axis does not reach the interval's high end (260): %s", out)
	}
	if !regexp.MustCompile(`<circle class="worse" [^>]*r="5.5" data-x="[\d.]+" data-y="130"><title>c</title>`).MatchString(out) {
		t.Errorf("the marked point is not drawn larger with its class: %s", out)
	}
	if strings.Contains(out, "data-tip") || !strings.Contains(out, ">03-02 00:00<") || !strings.Contains(out, `viewBox="0 0 720 200"`) {
		t.Errorf("data-tip, date ticks or size wrong: %s", out)
	}
	c.TipAttr = true
	if n := strings.Count(string(c.SVG()), `data-tip="`); n != 3 {
		t.Errorf("%d data-tip attributes, want 3", n)
	}
}

// TestCSSHasEveryColour: the style sheet colours every palette index, light
// and dark.
func TestCSSHasEveryColour(t *testing.T) {
	s := string(CSS())
	for i := range Colors {
		for _, want := range []string{"--c" + Num(float64(i)) + ":", ".c" + Num(float64(i)) + " polyline"} {
			if strings.Count(s, want) < 1 {
				t.Errorf("the CSS has no %q", want)
			}
		}
		if strings.Count(s, "--c"+Num(float64(i))+": ") != 2 {
			t.Errorf("colour %d is not defined for light and dark", i)
		}
	}
}
