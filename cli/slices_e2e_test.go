package cli

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// TestE2ESlices runs the sliced example plan against the built-in simulator
// over loopback: every level's point holds its slices, from its measured
// window's opening, whose output tokens add up to the level's and whose ITL
// comes from the run's per-slice histograms; its steadiness is judged and a
// check reads steady; runner report recomputes it byte for byte (as
// TestE2ERecomputeEqualsLive holds for every example plan); the page draws
// it over time. --slices slices a plan that asks for none, and without either
// nothing of it appears.
func TestE2ESlices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	code, _, stderr := runRunner(t, childEnv(), filepath.Join("..", "plans", "slices.yaml"), "--out", out, "--quiet", "--report", "json,html")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	r := loadReport(t, out)
	st := r.Stages[0]
	if len(st.Points) != 2 {
		t.Fatalf("%d points", len(st.Points))
	}
	for _, p := range st.Points {
		s := p.Slices
		if s == nil || s.WidthS != 1 || len(s.Windows) < 5 {
			t.Fatalf("%s: slices %+v", p.Label(), s)
		}
		var tokens float64
		itl := 0
		for k, w := range s.Windows {
			tokens += w.OutputTPS * (w.EndS - w.StartS)
			if w.StartS != float64(k) {
				t.Errorf("%s: slice %d starts at %v s", p.Label(), k, w.StartS)
			}
			if w.ITLP50Ms != nil {
				itl++
			}
		}
		level := p.OutputTPSTotal * p.DurationS
		if math.Abs(tokens-level) > 0.01*level {
			t.Errorf("%s: slices hold %.1f tokens, the level %.1f", p.Label(), tokens, level)
		}
		if itl < len(s.Windows)-1 {
			t.Errorf("%s: ITL in %d of %d slices", p.Label(), itl, len(s.Windows))
		}
		if !s.Steadiness.Judged || p.Steady == nil {
			t.Errorf("%s: steadiness %+v", p.Label(), s.Steadiness)
		} else if got, want := steadyTests(s), judgeable(s); got != want {
			t.Errorf("%s: steadiness tests %s, the slices allow %s (%+v)", p.Label(), got, want, s.Steadiness)
		}
	}
	steady := 0
	for _, c := range st.Checks {
		if c.Name == "steady" && (c.Status == "pass" || c.Status == "warn") {
			steady++
		}
	}
	if steady != 2 {
		t.Errorf("the steady check: %+v", st.Checks)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`-slices-inflight"`, `-slices-throughput"`, `-slices-ttft"`, `-slices-itl"`, `data-band="`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html has no %s", want)
		}
	}

	// --slices on a plan without them; and neither.
	flagged, plain := filepath.Join(dir, "flagged"), filepath.Join(dir, "plain")
	quick := filepath.Join("..", "plans", "quickstart.yaml")
	if code, _, stderr := runRunner(t, childEnv(), quick, "--out", flagged, "--quiet", "--report", "json", "--slices", "1s", "--set", "stages.sweep.requests=[4,8,16]"); code != 0 {
		t.Fatalf("--slices: exit %d\n%s", code, stderr)
	}
	for _, p := range loadReport(t, flagged).Stages[0].Points {
		if p.Slices == nil || p.Slices.WidthS != 1 || len(p.Slices.Windows) == 0 {
			t.Errorf("--slices 1s: %s has slices %+v", p.Label(), p.Slices)
		}
	}
	if code, _, stderr := runRunner(t, childEnv(), quick, "--out", plain, "--quiet", "--report", "json", "--set", "stages.sweep.requests=[4,8,16]"); code != 0 {
		t.Fatalf("plain: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(plain, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"slices"`)) || bytes.Contains(b, []byte(`"steady"`)) {
		t.Error("a run without slices has slices in report.json")
	}
	runs, err := os.ReadFile(filepath.Join(plain, "run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(runs, []byte(`itl_slices`)) || bytes.Contains(runs, []byte(`slice_ns`)) {
		t.Error("a run without slices records slices in run.jsonl")
	}
	// A bad --slices is a command-line error.
	code, _, stderr = runRunner(t, childEnv(), quick, "--out", filepath.Join(dir, "bad"), "--quiet", "--slices", "10ms")
	if code != 2 || !strings.Contains(stderr, "--slices: 10ms is not between 1s and 1h0m0s") {
		t.Errorf("--slices 10ms: exit %d\n%s", code, stderr)
	}
}

// steadyTests names a level's steadiness tests, in order.
func steadyTests(s *result.Slices) string {
	var names []string
	for _, st := range s.Steadiness.Tests {
		names = append(names, st.Test+" "+st.Metric)
	}
	return strings.Join(names, ", ")
}

// judgeable names the steadiness tests a judged level's slices allow
// (aggregate's judge): the first slice against the rest, always; the
// trends across the rest when three or more rest slices have the figure.
// On a quiet machine every test is made; a busy one that slows the
// requests below 5 in a slice, or holds the last send off a core, leaves
// a slice without its TTFT p50 or outside the judged span, and the trend
// is rightly not drawn from fewer slices.
func judgeable(s *result.Slices) string {
	var rest, ttft int
	for _, w := range s.Windows {
		if w.StartS <= s.Steadiness.FromS || w.EndS > s.Steadiness.ToS {
			continue // the first judged slice, or one not judged
		}
		rest++
		if w.TTFTP50Ms != nil {
			ttft++
		}
	}
	names := []string{"first ttft_p50_ms", "first output_tps"}
	if rest >= 3 {
		names = append(names, "trend output_tps")
	}
	if ttft >= 3 {
		names = append(names, "trend ttft_p50_ms")
	}
	return strings.Join(names, ", ")
}
