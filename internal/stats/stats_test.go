package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestPercentileIndex(t *testing.T) {
	cases := []struct {
		p    float64
		n    int
		want int
	}{
		{0.5, 1, 0},
		{0.5, 2, 0},    // 0.5 → even 0
		{0.5, 4, 2},    // 1.5 → even 2
		{0.5, 6, 2},    // 2.5 → even 2
		{0.95, 11, 10}, // the binary 0.95·10 rounds to 9.5 exactly → even 10
		{0.9, 32, 28},  // 27.9
		{0.99, 32, 31}, // 30.69
		{0.99, 100, 98},
		{1, 7, 6},
		{0.5, 0, 0},
	}
	for _, c := range cases {
		if got := PercentileIndex(c.p, c.n); got != c.want {
			t.Errorf("PercentileIndex(%v, %d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
}

func TestMinSamples(t *testing.T) {
	for _, c := range []struct {
		st   Statistic
		want int
	}{{Percentile(0.5), 5}, {Percentile(0.9), 10}, {Percentile(0.95), 20}, {Percentile(0.99), 100}, {Percentile(1), 100}, {Mean(), 5}, {Share(), 5}, {Rate(), 5}, {Ratio(), 5}} {
		if got := MinSamples(c.st); got != c.want {
			t.Errorf("MinSamples(%v) = %d, want %d", c.st, got, c.want)
		}
	}
}

// binomialAtLeast is P(Bin(n, q) ≥ k), summed exactly in log space.
func binomialAtLeast(n int, q float64, k int) float64 {
	if q >= 1 {
		return 1
	}
	s := 0.0
	for i := k; i <= n; i++ {
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
		s += math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(q) + float64(n-i)*math.Log1p(-q))
	}
	return s
}

// The Beta shortcut must reproduce the bootstrap distribution of the
// percentile exactly: a resample's k-th order statistic is at most the j-th
// sorted value when at least k+1 of its n draws fall on the first j+1
// values, P(Bin(n, (j+1)/n) ≥ k+1).
func TestPercentileBootstrapIsExact(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{20, 0.9}, {7, 0.5}, {50, 0.99}} {
		vals := make([]float64, c.n)
		for i := range vals {
			vals[i] = float64(i)
		}
		rep := percentileReplicator(vals, c.p)
		const draws = 40000
		out := make([]float64, draws)
		rep.draw(newRand(3), out)
		counts := make([]int, c.n)
		for _, v := range out {
			counts[int(v)]++
		}
		k := PercentileIndex(c.p, c.n)
		cum, worst := 0, 0.0
		for j := range c.n {
			cum += counts[j]
			exact := binomialAtLeast(c.n, float64(j+1)/float64(c.n), k+1)
			worst = max(worst, math.Abs(float64(cum)/draws-exact))
		}
		// Dvoretzky–Kiefer–Wolfowitz: P(sup > 0.012) ≤ 2·exp(−2·40000·0.012²) ≈ 2e−5.
		if worst > 0.012 {
			t.Errorf("n=%d p=%v: bootstrap CDF off the exact one by %.4f", c.n, c.p, worst)
		}
	}
}

// Wilson's interval against Newcombe (1998a), "Two-sided confidence
// intervals for the single proportion", Table I, method 3.
func TestWilson(t *testing.T) {
	z := normalQuantile(0.975)
	for _, c := range []struct {
		h, n   int
		lo, hi float64
	}{{81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}, {0, 20, 0, 0.1611}, {1, 29, 0.0061, 0.1718}} {
		lo, hi := wilson(c.h, c.n, z)
		if math.Abs(lo-c.lo) > 5e-5 || math.Abs(hi-c.hi) > 5e-5 {
			t.Errorf("wilson(%d/%d) = [%.4f, %.4f], want [%.4f, %.4f]", c.h, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

// The difference of shares against Newcombe (1998b), "Interval estimation
// for the difference between independent proportions", Table II, method 10.
func TestNewcombeDifference(t *testing.T) {
	for _, c := range []struct {
		h1, n1, h2, n2 int
		lo, hi         float64
	}{
		{56, 70, 48, 80, 0.0524, 0.3339}, {9, 10, 3, 10, 0.1705, 0.8090}, {6, 7, 2, 7, 0.0582, 0.8062},
		{5, 56, 0, 29, -0.0381, 0.1926}, {0, 10, 0, 20, -0.1611, 0.2775}, {0, 10, 0, 10, -0.2775, 0.2775},
		{10, 10, 0, 20, 0.6791, 1}, {10, 10, 0, 10, 0.6075, 1},
	} {
		d, err := Compare(Sample{Hits: c.h2, Trials: c.n2}, Sample{Hits: c.h1, Trials: c.n1}, Share(), HigherIsBetter, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(d.AbsCI.Lo-c.lo) > 5e-5 || math.Abs(d.AbsCI.Hi-c.hi) > 5e-5 {
			t.Errorf("%d/%d − %d/%d: [%.4f, %.4f], want [%.4f, %.4f]", c.h1, c.n1, c.h2, c.n2, d.AbsCI.Lo, d.AbsCI.Hi, c.lo, c.hi)
		}
	}
}

func TestShareRatioLimits(t *testing.T) {
	// A ratio interval must hold the point, and reach −100% when the new
	// share may be 0.
	d, _ := Compare(Sample{Hits: 90, Trials: 100}, Sample{Hits: 0, Trials: 100}, Share(), HigherIsBetter, Options{})
	if d.Rel != -1 || d.RelCI.Lo != -1 || !(d.RelCI.Hi > -1 && d.RelCI.Hi < -0.9) || d.Verdict != Worse {
		t.Errorf("90%% → 0%%: %+v", d)
	}
	// A base share of 1/200 has an upper Wilson limit above twice itself,
	// where the textbook MOVER-R formula divides by a negative number.
	d, _ = Compare(Sample{Hits: 1, Trials: 200}, Sample{Hits: 3, Trials: 200}, Share(), LowerIsBetter, Options{})
	if !(d.RelCI.Lo > -1 && d.RelCI.Lo < d.Rel && d.Rel < d.RelCI.Hi) || math.IsInf(d.RelCI.Hi, 0) || d.Verdict != Inconclusive {
		t.Errorf("1/200 → 3/200: %+v", d)
	}
	// No base successes: no relative change; the verdict reads the
	// difference, in share units.
	d, _ = Compare(Sample{Hits: 0, Trials: 200}, Sample{Hits: 0, Trials: 200}, Share(), LowerIsBetter, Options{Threshold: 0.05})
	if !math.IsNaN(d.Rel) || d.Verdict != Same {
		t.Errorf("0/200 → 0/200 at 5 points: %+v", d)
	}
	d, _ = Compare(Sample{Hits: 0, Trials: 200}, Sample{Hits: 10, Trials: 200}, Share(), LowerIsBetter, Options{Threshold: 0.05})
	if d.Verdict != Worse || !d.Fails(0.05) || !math.IsInf(d.WorseBy(), 1) {
		t.Errorf("0/200 → 10/200 failures: %+v", d)
	}
}

func TestValidation(t *testing.T) {
	ok := Sample{Values: []float64{1, 2, 3}, Costs: []float64{1, 1, 1}, Wall: 1, Hits: 1, Trials: 2}
	cases := []struct {
		name      string
		base, cur Sample
		st        Statistic
		dir       Direction
		opts      Options
		want      string
	}{
		{"confidence", ok, ok, Mean(), LowerIsBetter, Options{Confidence: 1}, "confidence 1 is not between 0 and 1"},
		{"threshold", ok, ok, Mean(), LowerIsBetter, Options{Threshold: -0.1}, "threshold -0.1"},
		{"resamples", ok, ok, Mean(), LowerIsBetter, Options{Resamples: -1}, "resamples -1 is negative"},
		{"direction", ok, ok, Mean(), 0, Options{}, "direction Direction(0) is not set"},
		{"percentile", ok, ok, Percentile(0), LowerIsBetter, Options{}, "percentile 0 is not in (0, 1]"},
		{"kind", ok, ok, Statistic{}, LowerIsBetter, Options{}, "unknown statistic Kind(0)"},
		{"nan", Sample{Values: []float64{1, math.NaN()}}, ok, Mean(), LowerIsBetter, Options{}, "base: value 1 is NaN"},
		{"costs length", ok, Sample{Values: []float64{1}, Costs: []float64{1, 2}}, Ratio(), LowerIsBetter, Options{}, "new: 2 costs for 1 values"},
		{"ratio costs", Sample{Values: []float64{1}}, ok, Ratio(), LowerIsBetter, Options{}, "base: a ratio needs costs"},
		{"negative cost", Sample{Values: []float64{1}, Costs: []float64{-1}}, ok, Ratio(), LowerIsBetter, Options{}, "base: cost 0 is -1"},
		{"zero costs", Sample{Values: []float64{1}, Costs: []float64{0}}, ok, Ratio(), LowerIsBetter, Options{}, "base: costs sum to 0"},
		{"wall", ok, Sample{Values: []float64{1}}, Rate(), HigherIsBetter, Options{}, "new: wall time 0 is not positive"},
		{"hits", Sample{Hits: 3, Trials: 2}, ok, Share(), HigherIsBetter, Options{}, "base: 3 hits in 2 trials"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compare(c.base, c.cur, c.st, c.dir, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := Compare(ok, ok, Mean(), LowerIsBetter, Options{}); err != nil {
		t.Errorf("valid input rejected: %v", err)
	}
}

func TestNoSamples(t *testing.T) {
	d, err := Compare(Sample{}, Sample{Values: []float64{1, 2, 3, 4, 5}}, Percentile(0.5), LowerIsBetter, Options{})
	if err != nil || d.Verdict != Inconclusive || d.Reason != "no samples in base" || !math.IsNaN(d.Base) || !math.IsNaN(d.WorseBy()) || d.Fails(0) {
		t.Errorf("empty base: %+v, %v", d, err)
	}
}

func TestDeterministicAndPure(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	base := latencies(r, 300, 0.3, 0, 1)
	cur := latencies(r, 300, 0.3, 0, 1.05)
	keep := slices.Clone(base)
	for _, st := range []Statistic{Percentile(0.9), Mean()} {
		a, _ := Compare(Sample{Values: base}, Sample{Values: cur}, st, LowerIsBetter, Options{Seed: 9})
		b, _ := Compare(Sample{Values: base}, Sample{Values: cur}, st, LowerIsBetter, Options{Seed: 9})
		c, _ := Compare(Sample{Values: base}, Sample{Values: cur}, st, LowerIsBetter, Options{Seed: 10})
		if fmt.Sprint(a) != fmt.Sprint(b) { // NaN fields make == false
			t.Errorf("%v: same seed, different results: %+v vs %+v", st, a, b)
		}
		if a.RelCI == c.RelCI || math.Abs(a.RelCI.Lo-c.RelCI.Lo) > 0.01 {
			t.Errorf("%v: another seed should move the interval a little: %+v vs %+v", st, a.RelCI, c.RelCI)
		}
	}
	if !slices.Equal(base, keep) {
		t.Error("Compare modified the caller's values")
	}
}

func TestPointEstimates(t *testing.T) {
	vals := []float64{5, 1, 4, 2, 3, 9, 7, 8, 6, 10}
	d, _ := Compare(Sample{Values: vals}, Sample{Values: vals}, Percentile(0.5), LowerIsBetter, Options{})
	if d.Base != 5 { // index round_half_even(4.5) = 4 of 1..10
		t.Errorf("p50 of 1..10 = %v, want 5", d.Base)
	}
	d, _ = Compare(Sample{Values: vals}, Sample{Values: []float64{11, 11, 11, 11, 11}}, Mean(), LowerIsBetter, Options{})
	if d.Base != 5.5 || d.New != 11 || d.Abs != 5.5 || d.Rel != 1 {
		t.Errorf("means: %+v", d)
	}
	d, _ = Compare(Sample{Values: []float64{64, 64}, Wall: 2}, Sample{Values: []float64{64, 64}, Costs: []float64{1, 3}, Wall: 4}, Rate(), HigherIsBetter, Options{})
	if d.Base != 64 || d.New != 32 || d.Rel != -0.5 || d.WorseBy() != 0.5 {
		t.Errorf("rates: %+v", d)
	}
	d, _ = Compare(Sample{Values: []float64{100, 300}, Costs: []float64{1, 1}}, Sample{Values: []float64{100, 300}, Costs: []float64{1, 3}}, Ratio(), HigherIsBetter, Options{})
	if d.Base != 200 || d.New != 100 {
		t.Errorf("ratios: %+v", d)
	}
}

func TestVerdicts(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	a := latencies(r, 500, 0.1, 0, 1)
	b := latencies(r, 500, 0.1, 0, 1)
	slow := latencies(r, 500, 0.1, 0, 1.2)
	check := func(name string, d Delta, err error, want Verdict) {
		t.Helper()
		if err != nil || d.Verdict != want {
			t.Errorf("%s: verdict %s (%s), want %s; %+v", name, d.Verdict, d.Reason, want, d)
		}
	}
	d, err := Compare(Sample{Values: a}, Sample{Values: slow}, Percentile(0.5), LowerIsBetter, Options{Threshold: 0.05})
	check("20% slower", d, err, Worse)
	if !d.Fails(0.1) || d.Fails(0.3) || d.WorseBy() < 0.15 {
		t.Errorf("20%% slower should fail a 10%% gate, not a 30%% one: worse by %v", d.WorseBy())
	}
	d, err = Compare(Sample{Values: slow}, Sample{Values: a}, Percentile(0.5), LowerIsBetter, Options{Threshold: 0.05})
	check("20% faster", d, err, Better)
	d, err = Compare(Sample{Values: a}, Sample{Values: b}, Percentile(0.5), LowerIsBetter, Options{Threshold: 0.05})
	check("A/A within 5%", d, err, Same)
	d, err = Compare(Sample{Values: a}, Sample{Values: b}, Percentile(0.5), LowerIsBetter, Options{})
	check("A/A without a threshold", d, err, Inconclusive)
	// Throughput: a drop is worse when higher is better.
	d, err = Compare(Sample{Values: a, Wall: 10}, Sample{Values: a, Costs: nil, Wall: 12}, Rate(), HigherIsBetter, Options{})
	check("throughput drop", d, err, Worse)
	// Identical constant samples are the same even with no threshold.
	ones := []float64{1, 1, 1, 1, 1, 1}
	d, err = Compare(Sample{Values: ones}, Sample{Values: ones}, Mean(), LowerIsBetter, Options{})
	check("constant", d, err, Same)
}

// A metric with too few samples for its statistic is never worse, however
// large the change: a p99 of 32 requests is one of the two slowest.
func TestLowSamplesNeverWorse(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		st Statistic
		n  int
	}{{Percentile(0.99), 32}, {Percentile(0.95), 19}, {Percentile(0.9), 9}, {Percentile(0.5), 4}, {Mean(), 4}} {
		base := Sample{Values: latencies(r, c.n, 0.05, 0, 1)}
		cur := Sample{Values: latencies(r, 200, 0.05, 0, 3)}
		d, err := Compare(base, cur, c.st, LowerIsBetter, Options{Threshold: 0.05})
		if err != nil || d.Verdict != Inconclusive || !d.LowSamples || !strings.Contains(d.Reason, "too few samples") || d.Fails(0) {
			t.Errorf("%v of %d requests, 3× slower: %s (%s)", c.st, c.n, d.Verdict, d.Reason)
		}
	}
	// Too few but clearly the same stays "same": the interval says so.
	same := []float64{10, 10, 10, 10}
	d, _ := Compare(Sample{Values: same}, Sample{Values: same}, Mean(), LowerIsBetter, Options{Threshold: 0.05})
	if d.Verdict != Same || !d.LowSamples {
		t.Errorf("four equal requests: %s", d.Verdict)
	}
}

func TestResamples(t *testing.T) {
	if got := resamples(0, 0.95); got != DefaultResamples {
		t.Errorf("default B = %d", got)
	}
	// A family of 30 at 95%: tails of 0.05/60 must hold 10 replicates.
	conf := FamilyConfidence(0.95, 30)
	if b := resamples(0, conf); float64(b+1)*(1-conf)/2 < minTail {
		t.Errorf("B = %d leaves fewer than %d replicates in a tail of %v", b, minTail, (1-conf)/2)
	}
	if got := resamples(0, 1-1e-9); got != maxResamples {
		t.Errorf("B not capped: %d", got)
	}
	if got := FamilyConfidence(0.95, 1); got != 0.95 {
		t.Errorf("family of one: %v", got)
	}
}

func TestSelectKth(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for trial := range 300 {
		n := 1 + r.IntN(60)
		a := make([]float64, n)
		for i := range a {
			a[i] = float64(r.IntN(1 + trial%10)) // many ties, as percentile replicates have
			if trial%7 == 0 {
				a[i] = math.Inf(1 - 2*r.IntN(2))
			}
		}
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		k := r.IntN(n)
		b := slices.Clone(a)
		if got := selectKth(b, k); got != sorted[k] {
			t.Fatalf("selectKth(%v, %d) = %v, want %v", a, k, got, sorted[k])
		}
		for i := range b {
			if (i < k && b[i] > b[k]) || (i > k && b[i] < b[k]) {
				t.Fatalf("selectKth(%v, %d) left %v unpartitioned", a, k, b)
			}
		}
	}
	reps := []float64{5, 1, 4, 2, 3, 9, 7, 8, 6, 10}
	// B = 10 at 80%: k = floor(11·0.1) = 1, the smallest and the largest.
	if got := percentileInterval(reps, 0.8); got != (Interval{1, 10}) {
		t.Errorf("interval %v", got)
	}
	// At 50%: k = floor(11·0.25) = 2: the 2nd smallest and 2nd largest.
	if got := percentileInterval(reps, 0.5); got != (Interval{2, 9}) {
		t.Errorf("interval %v", got)
	}
}

// Past MaxResampleSize requests a mean is bootstrapped from resamples of
// 1024 with deviations scaled to n: its spread and 95% limits must match a
// full bootstrap of all n, even for skewed latencies.
func TestSubsampleMatchesFullBootstrap(t *testing.T) {
	const n, b = 4096, 2000
	for _, sigma := range []float64{1} { // lognormal σ = 1: skewness about 6
		vals := latencies(rand.New(rand.NewPCG(6, 6)), n, sigma, 0, 1)
		full, sub := make([]float64, b), make([]float64, b)
		rf := ratioReplicator(vals, nil, 1, n)
		rs := ratioReplicator(vals, nil, 1, MaxResampleSize)
		rf.draw(newRand(1), full)
		rs.draw(newRand(2), sub)
		if rf.point != rs.point {
			t.Fatalf("points differ: %v %v", rf.point, rs.point)
		}
		sd := func(x []float64) float64 {
			var s float64
			for _, v := range x {
				s += (v - rf.point) * (v - rf.point)
			}
			return math.Sqrt(s / float64(len(x)))
		}
		sf, ss := sd(full), sd(sub)
		// The SD of an SD estimated from 2000 replicates is about 1.6%
		// (more with skew); 8% is five of those.
		if math.Abs(ss/sf-1) > 0.08 {
			t.Errorf("sigma %v: resample SD %.4g, full %.4g", sigma, ss, sf)
		}
		fi, si := percentileInterval(full, 0.95), percentileInterval(sub, 0.95)
		for _, e := range [][2]float64{{fi.Lo, si.Lo}, {fi.Hi, si.Hi}} {
			// Each 2.5% limit of 2000 replicates is off by 0.085 SE by
			// chance; the two differ by 0.12 SE; 0.3 is 2.5 of those.
			if math.Abs(e[0]-e[1]) > 0.3*sf {
				t.Errorf("sigma %v: 95%% limit %.5g (subsampled) vs %.5g (full), %.2f SE apart", sigma, e[1], e[0], math.Abs(e[0]-e[1])/sf)
			}
		}
	}
}

func TestDeal(t *testing.T) {
	// Costs 3, 1, 2, 2 dealt to 2 workers in order: 3 | 1, then 2 joins
	// the second (free at 1) → 3, then 2 joins either → 5.
	free := make([]float64, 2)
	for _, c := range []float64{3, 1, 2, 2} {
		deal(free, c)
	}
	if got := maxOf(free); got != 5 {
		t.Errorf("makespan %v, want 5", got)
	}
	// One worker: the sum; as many workers as requests: the largest.
	one, many := make([]float64, 1), make([]float64, 4)
	for _, c := range []float64{3, 1, 2, 2} {
		deal(one, c)
		deal(many, c)
	}
	if maxOf(one) != 8 || maxOf(many) != 3 {
		t.Errorf("makespans %v and %v, want 8 and 3", maxOf(one), maxOf(many))
	}
}
