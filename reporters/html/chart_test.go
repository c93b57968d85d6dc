package html

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
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
			out := string(distChart("d", stage(c.bounds...), "TTFT", pick).SVG())
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
