// Command gatestudy measures the regression gate's false-alarm and detection
// rates on the built-in simulator: it runs a plan in pairs and counts how
// often `runner compare --fail-above X` fails.
//
//   - A/A pairs: the same plan twice. Any failure is a false alarm.
//   - A/B pairs: the plan against a copy whose simulator setting (e.g.
//     itl_ms) is multiplied by a factor (e.g. 1.1, 10% slower). A failure is
//     a detection.
//
// Each pair i runs A, then each B, then A' (so a slow drift of the machine
// between A and A' is in the A/A pair at least as much as in an A/B one),
// and compares A with A' and A with each B. For every comparison it also
// prints the largest significant regression found (the --fail-above that
// would have been needed to pass): the A/A figures say what the machine's
// run-to-run noise costs. It names each run's levels the machine may have
// set (sim_behind, with the simulator's stretch; client_bottleneck) and
// counts the pairs in which nothing could be judged.
//
// Usage (from the module root; docs/statistics.md has the figures):
//
//	go run ./bench/cmd/gatestudy -pairs 20 -fail-above 5 -shift itl_ms=1.1 -shift ttft_ms=1.1
//
// A run of the default plan takes about a minute: 20 pairs with two shifts
// are 80 runs, over an hour on two cores. Loopback only.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// shift is one A/B variant: a simulator field multiplied by a factor.
type shift struct {
	field  string
	factor float64
}

type shifts []shift

func (s *shifts) String() string { return fmt.Sprint(*s) }

func (s *shifts) Set(v string) error {
	field, f, ok := strings.Cut(v, "=")
	factor, err := strconv.ParseFloat(f, 64)
	if !ok || err != nil || factor <= 0 || field == "" {
		return fmt.Errorf("want FIELD=FACTOR (itl_ms=1.1), got %q", v)
	}
	*s = append(*s, shift{field, factor})
	return nil
}

type config struct {
	plan, runner, out string
	pairs             int
	failAbove         float64
	shifts            shifts
	keep, reuse       bool
}

func main() {
	var c config
	flag.StringVar(&c.plan, "plan", "bench/gatestudy/plan.yaml", "the `plan` to run in pairs (simulator endpoints)")
	flag.IntVar(&c.pairs, "pairs", 20, "how many `pairs` of each kind")
	flag.Float64Var(&c.failAbove, "fail-above", 5, "runner compare's --fail-above `percent`")
	flag.Var(&c.shifts, "shift", "an A/B variant `FIELD=FACTOR`: the simulator's FIELD multiplied by FACTOR (repeatable; default itl_ms=1.1)")
	flag.StringVar(&c.runner, "runner", "", "the runner `binary` (default: built from ./cmd/runner)")
	flag.StringVar(&c.out, "out", "", "`dir`ectory for the runs, kept (default: a temporary one, removed after)")
	flag.BoolVar(&c.reuse, "reuse", false, "compare the runs already in -out again, without running anything (e.g. at another -fail-above)")
	flag.Parse()
	c.keep = c.out != ""
	if c.reuse && !c.keep {
		fmt.Fprintln(os.Stderr, "gatestudy: -reuse needs -out")
		os.Exit(2)
	}
	if len(c.shifts) == 0 {
		c.shifts = shifts{{"itl_ms", 1.1}}
	}
	if err := study(c); err != nil {
		fmt.Fprintln(os.Stderr, "gatestudy:", err)
		os.Exit(1)
	}
}

// tally counts one kind of pair.
type tally struct {
	name   string
	failed int
	blind  int            // pairs in which nothing could be judged (every level marked)
	worst  []float64      // per pair: the largest significant regression, % (0: none)
	metric map[string]int // pairs in which the metric (at any level) failed the gate
}

func study(c config) error {
	if c.out == "" {
		dir, err := os.MkdirTemp("", "gatestudy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.out = dir
	}
	if c.runner == "" {
		c.runner = filepath.Join(c.out, "runner")
		if out, err := exec.Command("go", "build", "-o", c.runner, "./cmd/runner").CombinedOutput(); err != nil {
			return fmt.Errorf("build the runner: %v\n%s", err, out)
		}
	}
	plans := []string{c.plan}
	for i, s := range c.shifts {
		p, err := shiftedPlan(c.plan, s, filepath.Join(c.out, fmt.Sprintf("plan-b%d.yaml", i)))
		if err != nil {
			return err
		}
		plans = append(plans, p)
	}
	tallies := []*tally{{name: "A/A", metric: map[string]int{}}}
	for _, s := range c.shifts {
		tallies = append(tallies, &tally{name: fmt.Sprintf("A/B %s ×%g", s.field, s.factor), metric: map[string]int{}})
	}
	fmt.Printf("plan %s, %d pairs, runner compare --fail-above %g\n\n", c.plan, c.pairs, c.failAbove)
	start := time.Now()
	for i := range c.pairs {
		if err := pair(c, i, plans, tallies); err != nil {
			return err
		}
	}
	fmt.Printf("\n%d pairs of each kind in %s\n", c.pairs, time.Since(start).Round(time.Second))
	for _, t := range tallies {
		slices.Sort(t.worst)
		fmt.Printf("%-22s failed %2d of %d (%d judged nothing); largest significant regression per pair: median %.1f%%, 95th percentile %.1f%%, max %.1f%%\n",
			t.name, t.failed, c.pairs, t.blind, t.worst[len(t.worst)/2], t.worst[(len(t.worst)*19+19)/20-1], t.worst[len(t.worst)-1])
	}
	byMetric(tallies)
	return nil
}

// byMetric prints, for each metric that failed the gate in some pair, in
// how many pairs of each kind it did: what a gate on that metric alone
// (worse() in a check, at the same family confidence) would have done.
func byMetric(tallies []*tally) {
	var names []string
	for _, t := range tallies {
		for m := range t.metric {
			if !slices.Contains(names, m) {
				names = append(names, m)
			}
		}
	}
	slices.Sort(names)
	fmt.Printf("\npairs in which each metric failed the gate (at any level):\n%-28s", "metric")
	for _, t := range tallies {
		fmt.Printf(" %22s", t.name)
	}
	fmt.Println()
	for _, m := range names {
		fmt.Printf("%-28s", m)
		for _, t := range tallies {
			fmt.Printf(" %22d", t.metric[m])
		}
		fmt.Println()
	}
}

// pair runs A, each B, then A', and compares A with A' and with each B.
func pair(c config, i int, plans []string, tallies []*tally) error {
	dirs := make([]string, len(plans)+1)
	order := append(slices.Clone(plans), plans[0]) // A, B..., A'
	var loads []string
	for k, p := range order {
		loads = append(loads, loadavg())
		dirs[k] = filepath.Join(c.out, fmt.Sprintf("pair%02d-run%d", i, k))
		if c.reuse {
			continue
		}
		cmd := exec.Command(c.runner, p, "--out", dirs[k], "--quiet", "--report", "json", "--no-progress")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("run %s: %v\n%s", p, err, out)
		}
	}
	if !c.reuse {
		fmt.Printf("pair %2d machine load (1-minute average) before each run: %s\n", i+1, strings.Join(append(loads, loadavg()), ", "))
	}
	for k, d := range dirs {
		if m, err := marked(d); err != nil {
			return err
		} else if m != "" {
			fmt.Printf("pair %2d run %d marked: %s\n", i+1, k, m)
		}
	}
	against := append([]string{dirs[len(dirs)-1]}, dirs[1:len(dirs)-1]...) // A', B...
	for k, t := range tallies {
		code, err := compareExit(c, dirs[0], against[k])
		if err != nil {
			return err
		}
		res, err := compareRuns(dirs[0], against[k], c.failAbove)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, f := range res.Failures(c.failAbove) {
			if !seen[f.Metric] {
				seen[f.Metric] = true
				t.metric[f.Metric]++
			}
		}
		worst, what := 0.0, ""
		if f, ok := res.WorstRegression(); ok {
			worst = math.Min(f.WorseBy()*100, 1e6)
			what = fmt.Sprintf("(%s %s %s %s)", f.Stage, f.Label, f.Metric, f.Describe())
		}
		if code == 1 {
			t.failed++
		}
		if res.Summary.Blind() {
			t.blind++
		}
		t.worst = append(t.worst, worst)
		fmt.Printf("pair %2d %-22s exit %d  largest significant regression %5.1f%% %s\n", i+1, t.name, code, worst, what)
	}
	if c.keep {
		return nil
	}
	for _, d := range dirs { // a run is a few MB of records
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	return nil
}

// marked lists the run's levels where the machine, not the server, may have
// set the numbers: the built-in simulator fell behind its model (sim_behind:
// a comparison judges only changes larger than its stretch) or the client
// was the bottleneck (nothing judged), with the figures ("" when none).
func marked(dir string) (string, error) {
	rep, err := readReport(dir)
	if err != nil {
		return "", err
	}
	var out []string
	for _, st := range rep.Stages {
		for _, p := range st.Points {
			var why []string
			if p.SimBehind && p.SimBehindRequests != nil && p.SimLagMeanMs != nil {
				why = append(why, fmt.Sprintf("sim_behind (%d of %d requests stretched by more than 2.5%%; stretch max TTFT %s, decode %s, E2E %s; lag mean %.2f ms; %d late steps)",
					*p.SimBehindRequests, p.Completed, pct(p.SimTTFTStretchMax), pct(p.SimDecodeStretchMax), pct(p.SimE2EStretchMax), *p.SimLagMeanMs, *p.SimLateSteps))
			}
			if p.ClientBottleneck {
				why = append(why, "client_bottleneck")
			}
			if len(why) > 0 {
				out = append(out, st.Name+" "+p.Label()+" "+strings.Join(why, ", "))
			}
		}
	}
	return strings.Join(out, "; "), nil
}

// readReport reads the report.json of the result directory dir.
func readReport(dir string) (*result.Report, error) {
	path := filepath.Join(dir, records.FileReport)
	rep, err := records.ReadReport(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// pct is a stretch maximum in percent (">10000%" past every bound).
func pct(v *float64) string {
	if v == nil {
		return ">10000%"
	}
	return fmt.Sprintf("%g%%", 100**v)
}

// loadavg is the machine's 1-minute load average ("?" where unknown): the
// other processes competing for its cores, which move whole runs.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f, _, _ := strings.Cut(string(b), " ")
	return f
}

// compareExit is runner compare's exit code on the two runs: 0 passed, 1
// the gate failed.
func compareExit(c config, base, cur string) (int, error) {
	cmd := exec.Command(c.runner, "compare", base, cur, "--fail-above", strconv.FormatFloat(c.failAbove, 'f', -1, 64))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return 1, nil
	}
	return 0, fmt.Errorf("runner compare: %v\n%s", err, out)
}

// compareRuns is the comparison runner compare makes of two runs at this
// --fail-above.
func compareRuns(base, cur string, failAbove float64) (*comparison.Result, error) {
	var runs [2]comparison.Run
	for k, dir := range []string{base, cur} {
		rep, err := readReport(dir)
		if err != nil {
			return nil, err
		}
		samples, err := pipeline.RecordSamples(dir, rep)
		if err != nil {
			return nil, err
		}
		runs[k] = comparison.Run{Report: rep, Samples: samples}
	}
	// The family runner compare judges: the new run's worse() metrics, else
	// every server metric with an interval.
	stages, err := pipeline.RecordedStages(cur)
	if err != nil {
		return nil, err
	}
	fam := comparison.PlanFamily(stages)
	return comparison.Compare(runs[0], runs[1], comparison.Options{Threshold: min(fam.Threshold(), failAbove/100), Family: fam})
}

// shiftedPlan writes a copy of the plan whose simulators' field s.field is
// multiplied by s.factor (the name stays, so the two runs compare).
func shiftedPlan(path string, s shift, out string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	n := 0
	for _, ep := range mapValues(child(doc.Content[0], "endpoints")) {
		sim := child(ep, "simulator")
		if v := child(sim, s.field); v != nil {
			f, err := strconv.ParseFloat(v.Value, 64)
			if err != nil {
				return "", fmt.Errorf("%s: simulator %s: %w", path, s.field, err)
			}
			v.Value, v.Tag, v.Style = strconv.FormatFloat(f*s.factor, 'f', -1, 64), "!!float", 0
			n++
		}
	}
	if n == 0 {
		return "", fmt.Errorf("%s: no simulator endpoint sets %s", path, s.field)
	}
	b, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	return out, os.WriteFile(out, b, 0o644)
}

// child is a mapping node's value under key (nil: none).
func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func mapValues(m *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	if m != nil && m.Kind == yaml.MappingNode {
		for i := 1; i < len(m.Content); i += 2 {
			out = append(out, m.Content[i])
		}
	}
	return out
}
