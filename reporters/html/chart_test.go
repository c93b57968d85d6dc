package html

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
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
		}
	}
}

func TestLoadAxisLogOnlyFromEightfoldSpan(t *testing.T) {
	mk := func(xs ...float64) lineChart {
		s := series{Name: "s"}
		for _, x := range xs {
			s.Points = append(s.Points, xy{X: x, Y: f(x)})
		}
		return lineChart{ID: "t", XLabel: "concurrency", YLabel: "y", XLogAuto: true, XIntTicks: true, Series: []series{s}}
	}
	if out := string(mk(1, 2, 4, 8).svg("t")); !strings.Contains(out, "(log scale)") {
		t.Error("1..8 (8x): want a log axis")
	}
	if out := string(mk(1, 2, 4, 7).svg("t")); strings.Contains(out, "(log scale)") {
		t.Error("1..7 (<8x): want a linear axis")
	}
	c := mk(1, 2, 4, 8)
	c.XLogAuto = false
	if out := string(c.svg("t")); strings.Contains(out, "(log scale)") {
		t.Error("XLogAuto off: want a linear axis")
	}
}

func TestNullsAreGapsNotZeros(t *testing.T) {
	c := lineChart{ID: "t", XLabel: "x", YLabel: "y", Series: []series{{Name: "s", Points: []xy{
		{X: 1, Y: f(10)}, {X: 2, Y: f(12)}, {X: 3, Y: nil}, {X: 4, Y: f(15)}, {X: 5, Y: f(16)}, {X: 6, Y: f(math.NaN())}, {X: 7, Y: f(3)},
	}}}}
	out := []byte(c.svg("t"))
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
	c := lineChart{ID: "t", Series: []series{{Name: "s", Points: []xy{{X: 1}, {X: 2}}}}}
	if s := string(c.svg("t")); !strings.Contains(s, "no data") || strings.Contains(s, "<circle") {
		t.Errorf("all-null chart: %s", s)
	}
	if s := string((barChart{ID: "b"}).svg("t")); !strings.Contains(s, "no data") {
		t.Errorf("empty bar chart: %s", s)
	}
}

func TestBarsStack(t *testing.T) {
	c := barChart{ID: "b", Categories: []string{"c=1", "c=2"}, Stacks: []barStack{
		{Name: "a", Values: []float64{3, 0}}, {Name: "b", Color: 1, Values: []float64{1, 4}},
	}}
	s := string(c.svg("t"))
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
}

func TestEscapeInSVG(t *testing.T) {
	c := lineChart{ID: `a"b`, XLabel: "<x>", YLabel: "y & z", Series: []series{{Name: `<s>"`, Points: []xy{{X: 1, Y: f(1), Tip: "</title><script>"}}}}}
	out := []byte(c.svg(`t<&>`))
	if err := xmlWellFormed(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("<script>")) || bytes.Contains(out, []byte("<x>")) {
		t.Errorf("unescaped text in %s", out)
	}
}

// TestDistributionAxisIsLog: a latency distribution is drawn on a log axis
// whatever its spread (a tight TTFT spread, sub-millisecond gaps beside a
// stall), with ticks in units a reader reads: ms, s, min.
func TestDistributionAxisIsLog(t *testing.T) {
	stage := func(bounds ...float64) *result.Stage {
		var hist []result.Bucket
		for _, b := range bounds {
			hist = append(hist, result.Bucket{UpperMs: b, Count: 3})
		}
		return &result.Stage{Name: "s", Points: []result.Point{{Concurrency: 1, TTFTHist: hist, ITLHist: hist}}}
	}
	for _, c := range []struct {
		name   string
		bounds []float64
		ticks  []string
	}{
		{"tight", []float64{95.3, 96.5, 97.6, 98.8, 100, 101, 102, 104, 105}, []string{"100 ms"}},
		{"llama-server ITL", []float64{0.1, 0.15, 0.22, 0.32, 0.46, 0.68, 1, 1.5, 2.2, 10, 100, 1000, 1500}, []string{"0.1 ms", "1 ms", "1 s"}},
		{"minutes", []float64{150, 1000, 10_000, 100_000, 220_000}, []string{"100 ms", "10 s", "1.67 min"}},
	} {
		for _, pick := range []func(*result.Point) []result.Bucket{
			func(p *result.Point) []result.Bucket { return p.TTFTHist },
			func(p *result.Point) []result.Bucket { return p.ITLHist },
		} {
			out := string(distChart("d", stage(c.bounds...), "TTFT", pick).svg("t"))
			if !strings.Contains(out, "(log scale)") {
				t.Errorf("%s: the distribution's axis is not log", c.name)
			}
			for _, tick := range c.ticks {
				if !strings.Contains(out, ">"+tick+"</text>") {
					t.Errorf("%s: no tick %q", c.name, tick)
				}
			}
		}
	}
	if got := msText(0.1) + "," + msText(1500) + "," + msText(90_000); got != "0.1 ms,1.5 s,1.5 min" {
		t.Errorf("msText: %s", got)
	}
}

// TestNoModeWithoutOutput: a stage of an API without output shows no mode,
// even from an earlier report that recorded "pinned" for it; a chat stage
// shows its own.
func TestNoModeWithoutOutput(t *testing.T) {
	rep := &result.Report{Stages: []result.Stage{
		{Name: "e", API: "embeddings", Mode: "pinned", Load: result.LoadConcurrency},
		{Name: "c", API: "chat", Mode: "natural", Load: result.LoadConcurrency},
	}}
	var b strings.Builder
	if err := Write(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "mode <b>pinned</b>") || !strings.Contains(page, "mode <b>natural</b>") {
		t.Fatalf("modes shown: pinned %v, natural %v", strings.Contains(page, "mode <b>pinned</b>"), strings.Contains(page, "mode <b>natural</b>"))
	}
}
