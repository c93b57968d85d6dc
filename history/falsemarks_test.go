package history_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
)

// memHistory is a history of len(ttft) runs made in memory, without a
// database: each run's levels from synthrun.Levels (run i with median TTFT
// ttft[i]), their values and samples computed by aggregate as a published
// run's are (store.Publish writes the report's values, store.Samples
// recomputes the samples from the requests). With metrics, only those
// metrics' values are kept (every metric's otherwise).
func memHistory(tb testing.TB, seed uint64, ttft []float64, spec synthrun.Spec, metrics ...string) (*store.Series, history.SamplesFunc) {
	tb.Helper()
	s := &store.Series{}
	type key struct {
		run   int
		label string
	}
	samples := map[key]*aggregate.Samples{}
	for i, m := range ttft {
		sp := spec
		sp.StartedAt, sp.Seed, sp.TTFTMs = day0.Add(time.Duration(i)*24*time.Hour), seed*100_000+uint64(i)+1, m
		s.Runs = append(s.Runs, &store.Run{ID: fmt.Sprint(i), StartedAt: sp.StartedAt})
		err := synthrun.Levels(sp, func(rec *result.LevelRecord, reqs []*result.Request) error {
			lvl := aggregate.NewLevel(rec.Spec, 0)
			lvl.KeepSamples()
			for _, r := range reqs {
				lvl.Add(r)
			}
			p := lvl.Point(rec)
			all, _ := lvl.Samples(rec)
			samples[key{i, rec.Spec.Label}] = all
			ms := result.Metrics()
			for j := range ms {
				if len(metrics) > 0 && !slices.Contains(metrics, ms[j].Name) {
					continue
				}
				if v, ok := ms[j].Value(&p); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
					s.Values = append(s.Values, store.Value{Run: i, Stage: rec.Stage, Label: rec.Spec.Label, Position: rec.Level,
						Metric: ms[j].Name, Value: v, Judgeable: true})
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return s, func(run int, stage, label string) (*aggregate.Samples, error) {
		return samples[key{run, label}], nil
	}
}

func marks(h *history.History) (n int, where []string) {
	for _, se := range h.Series {
		for _, p := range se.Points {
			if p.Change {
				n++
				where = append(where, fmt.Sprintf("%s %s run %d %s", se.Label, se.Metric, p.Run, p.Verdict))
			}
		}
	}
	return n, where
}

// latencies are the per-request latency metrics: judged, with cheap
// bootstraps.
var latencies = []string{"ttft_p50_ms", "ttft_p90_ms", "ttft_p95_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p95_ms",
	"e2e_p50_ms", "e2e_p95_ms", "n_requests"}

func steady(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 100
	}
	return out
}

// TestHistoryFamilyHoldsOverTheWholeHistory: the family is every window
// of every judged series, so unchanged histories of 120 runs (one level,
// every metric: 25 judged series, 2,875 windows each) carry no mark, where
// a family of the series alone (each window at 99.8% here) left 2 false marks in one of the three;
// and a 30% slower TTFT from run 100 on is still marked, worse, within the
// window that holds the slower runs.
func TestHistoryFamilyHoldsOverTheWholeHistory(t *testing.T) {
	spec := synthrun.Spec{Concurrency: []int{4}, Requests: 80}
	withMarks := 0
	for seed := range uint64(3) {
		s, samples := memHistory(t, seed+1, steady(120), spec)
		h, err := history.Build(s, samples, history.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if h.Windows < 20*115 || h.Each < 1-0.05/float64(h.Windows)-1e-12 {
			t.Fatalf("family: %d windows, each at %v", h.Windows, h.Each)
		}
		if n, where := marks(h); n > 0 {
			withMarks++
			t.Logf("seed %d: %d false marks: %v", seed+1, n, where)
		}
	}
	// At most 5% of unchanged histories have any mark.
	if withMarks > 0 {
		t.Errorf("%d of 3 unchanged histories have false marks", withMarks)
	}

	ttft := steady(120)
	for i := 100; i < 120; i++ {
		ttft[i] = 130
	}
	// The latencies alone (a percentile's bootstrap is cheap; the
	// throughputs', at a family's confidence, are not, under -race).
	s, samples := memHistory(t, 9, ttft, spec, latencies...)
	h, err := history.Build(s, samples, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, se := range h.Series {
		for _, p := range se.Points {
			if p.Change && se.Metric == "ttft_p50_ms" {
				got = append(got, fmt.Sprintf("%s run %d %s", se.Label, p.Run, p.Verdict))
				if p.Run < 100 || p.Run > 102 || p.Verdict != "worse" {
					t.Errorf("%s ttft_p50_ms marked %s at run %d, want worse at 100–102", se.Label, p.Verdict, p.Run)
				}
			}
		}
	}
	if len(got) != 1 {
		t.Errorf("ttft_p50_ms marks %v, want one", got)
	}
}

// BenchmarkHistoryFalseMarks measures the family's false-mark rate and the
// power left to it (docs/statistics.md, "History"): 40 unchanged histories
// of 1,000 runs (two levels of 80 requests, every metric), made in memory;
// histories-with-marks is the share that carry any mark at all (the family
// allows 5%), marks the false marks in all of them. Then, in one history of
// 1,000 runs, TTFT p50 is made slower by 5–30% from run 990 on, and
// step-N%-marked says whether the step was marked worse on both levels.
//
//	go test ./history -run '^$' -bench HistoryFalseMarks -benchtime 1x
func BenchmarkHistoryFalseMarks(b *testing.B) {
	spec := synthrun.Spec{Concurrency: []int{1, 4}, Requests: 80}
	for range b.N {
		withMarks, total, windows := 0, 0, 0
		const histories = 40
		for seed := range uint64(histories) {
			s, samples := memHistory(b, 1000+seed, steady(1000), spec)
			h, err := history.Build(s, samples, history.Options{})
			if err != nil {
				b.Fatal(err)
			}
			n, where := marks(h)
			if n > 0 {
				withMarks++
				b.Logf("seed %d: %v", 1000+seed, where)
			}
			total += n
			windows += h.Windows
		}
		b.ReportMetric(float64(withMarks)/histories, "histories-with-marks")
		b.ReportMetric(float64(total), "marks")
		b.ReportMetric(float64(windows), "windows")
		for _, step := range []float64{5, 10, 15, 20, 30} {
			ttft := steady(1000)
			for i := 990; i < 1000; i++ {
				ttft[i] = 100 * (1 + step/100)
			}
			s, samples := memHistory(b, 7, ttft, spec)
			h, err := history.Build(s, samples, history.Options{})
			if err != nil {
				b.Fatal(err)
			}
			marked := 0
			for _, se := range h.Series {
				for _, p := range se.Points {
					if se.Metric == "ttft_p50_ms" && p.Change && p.Verdict == "worse" && p.Run >= 990 {
						marked++
						break
					}
				}
			}
			b.ReportMetric(float64(marked)/2, fmt.Sprintf("step-%g%%-marked", step))
		}
	}
}
