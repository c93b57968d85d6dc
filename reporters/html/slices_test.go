package html

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// The sliced fixture is a real run of plans/slices.yaml against the
// built-in simulator (two levels of 5 s in 1 s slices).
const slicedFixture = "sliced.json"

// TestSliceChartsCarryTheSlices: each chart over time has one marker per
// slice with a value, at its level's offset plus the slice's middle,
// carrying the slice's exact value; a slice without one (a p95 from too few
// requests) is a gap, not a zero. Each level's opening is a mark, its slice
// ends are ticks, its steady window a band; a level found not steady is
// amber and flagged in the levels table.
func TestSliceChartsCarryTheSlices(t *testing.T) {
	r := loadReport(t, slicedFixture)
	st := &r.Stages[0]
	doc := parse(t, render(t, r, nil))
	anchor := "stage-" + st.Name
	t0 := st.Points[0].Slices.Start
	for _, c := range []struct {
		id, series string
		val        func(s *result.Slice) *float64
	}{
		{"-slices-inflight", "mean in flight", func(s *result.Slice) *float64 { return &s.InFlightMean }},
		{"-slices-throughput", "output tok/s", func(s *result.Slice) *float64 { return &s.OutputTPS }},
		{"-slices-ttft", "TTFT p95", func(s *result.Slice) *float64 { return s.TTFTP95Ms }},
		{"-slices-itl", "ITL p50", func(s *result.Slice) *float64 { return s.ITLP50Ms }},
	} {
		svg := chartNode(t, doc, anchor+c.id)
		g := seriesGroup(t, svg, c.series)
		var want []string
		var xs []string
		slices := 0
		for i := range st.Points {
			p := &st.Points[i]
			off := p.Slices.Start.Sub(t0).Seconds()
			for k := range p.Slices.Windows {
				w := &p.Slices.Windows[k]
				slices++
				if w.Partial && w.EndS-w.StartS < p.Slices.WidthS/2 {
					continue // a sliver of the drain: not drawn
				}
				if v := c.val(w); v != nil {
					want = append(want, fmtNum(*v))
					xs = append(xs, fmtNum(off+(w.StartS+w.EndS)/2))
				}
			}
		}
		ys, _ := markers(g)
		if strings.Join(ys, " ") != strings.Join(want, " ") {
			t.Errorf("%s: markers %v, want %v", c.id, ys, want)
		}
		var gotX []string
		for _, m := range findAll(g, "circle", nil) {
			x, _ := attr(m, "data-x")
			gotX = append(gotX, x)
		}
		if strings.Join(gotX, " ") != strings.Join(xs, " ") {
			t.Errorf("%s: marker x %v, want %v", c.id, gotX, xs)
		}
		if n := len(findAll(svg, "line", func(n *xhtml.Node) bool { _, ok := attr(n, "data-edge"); return ok })); n != slices {
			t.Errorf("%s: %d slice ticks, want %d", c.id, n, slices)
		}
		if n := len(findAll(svg, "g", func(n *xhtml.Node) bool { _, ok := attr(n, "data-mark"); return ok })); n != len(st.Points) {
			t.Errorf("%s: %d level marks, want %d", c.id, n, len(st.Points))
		}
		bands := findAll(svg, "rect", hasAttr("class", "band"))
		if len(bands) != len(st.Points) {
			t.Fatalf("%s: %d bands, want one per judged level", c.id, len(bands))
		}
		for i, b := range bands {
			p := &st.Points[i]
			x0, _ := attr(b, "data-x0")
			want := p.Slices.Start.Sub(t0).Seconds() + p.Slices.Steadiness.SteadyFromS
			if x0 != fmtNum(want) || attrOr(b, "data-band") != "steady" {
				t.Errorf("%s: band %d from %s (%s), want %s steady", c.id, i, x0, attrOr(b, "data-band"), fmtNum(want))
			}
		}
	}

	// A series sampled during the levels (telemetry) gets a chart of its
	// own, a point per slice that has it.
	st.Points[0].Slices.Windows[1].Series = map[string]float64{"gpu_power_w": 212.5}
	st.Points[1].Slices.Windows[0].Series = map[string]float64{"gpu_power_w": 301}
	doc = parse(t, render(t, r, nil))
	if ys, _ := markers(seriesGroup(t, chartNode(t, doc, anchor+"-slices-series-0"), "gpu_power_w")); strings.Join(ys, " ") != "212.5 301" {
		t.Errorf("telemetry series markers %v", ys)
	}

	// Not steady: amber, and flagged beside the level.
	f := false
	st.Points[1].Slices.Steadiness.Steady, st.Points[1].Steady = &f, &f
	page := render(t, r, nil)
	doc = parse(t, page)
	if n := len(findAll(doc, "rect", hasAttr("data-band", "unsteady"))); n != 5 {
		t.Errorf("%d unsteady bands, want one in each of the 5 charts (4 and the telemetry series')", n)
	}
	if !bytes.Contains(page, []byte("not steady across its slices")) {
		t.Error("the levels table does not flag the unsteady level")
	}
}

// TestSlicesGolden: the sliced fixture's page, byte for byte (go test
// -update rewrites it); the unsliced goldens (TestGolden) are untouched by
// slices.
func TestSlicesGolden(t *testing.T) {
	got := render(t, loadReport(t, slicedFixture), nil)
	path := filepath.Join("testdata", "sliced.golden.html")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Error("sliced.golden.html differs; run go test -update and review the diff")
	}
	// The fixture's levels really are sliced, with many slices.
	r := loadReport(t, slicedFixture)
	if n := len(r.Stages[0].Points[0].Slices.Windows); n < 5 {
		t.Fatalf("fixture level has %s slices", strconv.Itoa(n))
	}
}

// TestSlicedKVCacheAtZero: a sliced stage whose endpoint's KV-cache gauge
// read 0 in every slice while requests ran has no KV-cache chart and says
// why; one whose gauge moved has its chart.
func TestSlicedKVCacheAtZero(t *testing.T) {
	stage := func(kv float64) *result.Stage {
		var ws []result.Slice
		for k := range 3 {
			ws = append(ws, result.Slice{StartS: float64(k), EndS: float64(k + 1), Series: map[string]float64{
				aggregate.SeriesKVCache: kv * float64(k), aggregate.SeriesRunning: 2}})
		}
		return &result.Stage{Name: "s", Points: []result.Point{{Concurrency: 2, Slices: &result.Slices{WidthS: 1, Start: time.Unix(100, 0), Windows: ws}}}}
	}
	charts, notes := sliceCharts(stage(0), "a")
	for _, c := range charts {
		if strings.Contains(c.Title, "KV-cache") {
			t.Errorf("a KV-cache chart at zero: %s", c.Title)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "read 0 in all 3 slices while it ran up to 2 requests") {
		t.Errorf("notes: %q", notes)
	}
	charts, notes = sliceCharts(stage(0.2), "a")
	kv := 0
	for _, c := range charts {
		if strings.Contains(c.Title, "KV-cache") {
			kv++
		}
	}
	if kv != 1 || len(notes) != 0 {
		t.Errorf("a KV-cache gauge that moved: %d charts, notes %q", kv, notes)
	}
}

// TestSeriesLoadCharts: a series level's slices carry the load its series
// asked for, drawn beside what was done: a rate series gets a chart of the
// rate asked for and the rate sent, slice by slice; a concurrency series
// adds the streams asked for to the in-flight chart.
func TestSeriesLoadCharts(t *testing.T) {
	r := loadReport(t, slicedFixture)
	st := &r.Stages[0]
	st.Points = st.Points[:1]
	p := &st.Points[0]
	sr := &result.Series{Over: result.LoadRate, Shape: "linear", Pieces: []result.SeriesPiece{{DurationS: 5, From: 10, To: 50}}}
	p.Series = sr
	var want []string
	for k := range p.Slices.Windows {
		w := &p.Slices.Windows[k]
		v := float64(10 + 8*k + 4) // the ramp's mean over second k
		w.Load = &v
		if !w.Partial || w.EndS-w.StartS >= p.Slices.WidthS/2 {
			want = append(want, fmtNum(v))
		}
	}
	anchor := "stage-" + st.Name
	for _, c := range []struct {
		load     result.LoadKind
		id, line string
	}{
		{result.LoadRate, "-slices-load", "rate the series asked for"},
		{result.LoadConcurrency, "-slices-inflight", "streams the series asked for"},
	} {
		st.Load, sr.Over = c.load, c.load
		doc := parse(t, render(t, r, nil))
		if ys, _ := markers(seriesGroup(t, chartNode(t, doc, anchor+c.id), c.line)); strings.Join(ys, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %q markers %v, want %v", c.load, c.line, ys, want)
		}
	}
}
