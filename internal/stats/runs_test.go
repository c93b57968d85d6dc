package stats

import (
	"math"
	"testing"
)

// TestRunsIntervalIsTheReplicateInterval: from the runs' statistics alone,
// RunsInterval gives the replicate interval Compare computes from the same
// runs as replicates, so history's first look at a window can never call
// worse what the full comparison would not.
func TestRunsIntervalIsTheReplicateInterval(t *testing.T) {
	runs := func(means ...float64) (Sample, []float64) {
		var pooled Sample
		for i, m := range means {
			r := Sample{}
			for j := range 40 {
				r.Values = append(r.Values, m*(1+0.02*float64((j*7+i)%11-5)))
			}
			pooled.Values = append(pooled.Values, r.Values...)
			pooled.Replicates = append(pooled.Replicates, r)
		}
		var thetas []float64
		for _, r := range pooled.Replicates {
			thetas = append(thetas, mean(r.Values))
		}
		return pooled, thetas
	}
	base, tb := runs(100, 103, 98, 101, 99)
	cur, tc := runs(112, 109, 115)
	d, err := Compare(base, cur, Statistic{Kind: KindMean}, LowerIsBetter, Options{Confidence: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	abs, rel, ok := RunsInterval(tb, tc, 0.99)
	if !ok {
		t.Fatal("no interval")
	}
	for _, c := range []struct {
		name      string
		got, want Interval
	}{{"abs", abs, d.ReplicateAbsCI}, {"rel", rel, d.ReplicateRelCI}} {
		if math.Abs(c.got.Lo-c.want.Lo) > 1e-9 || math.Abs(c.got.Hi-c.want.Hi) > 1e-9 {
			t.Errorf("%s: RunsInterval %v, Compare's replicate interval %v", c.name, c.got, c.want)
		}
	}
	if !(rel.Lo > 0) || d.Verdict != Worse {
		t.Errorf("a 12%% slower window: interval %v, verdict %s; want above 0 and worse", rel, d.Verdict)
	}
	if _, _, ok := RunsInterval(tb[:1], tc, 0.95); ok {
		t.Error("an interval from one base run")
	}
}
