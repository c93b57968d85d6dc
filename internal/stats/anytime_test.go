package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The confidence sequences are tested where the truth is known: seeded
// draws from a lognormal latency (its quantiles and mean in closed form) and
// from Bernoulli trials, looked at after every draw up to a horizon. A
// sequence fails a trial when any look's interval misses the truth; the
// promise is that at most 1 − confidence of trials fail, however many looks.
// The same trials, judged by the fixed-size interval at every look, must
// fail far more often: the test can tell a sequence from an interval.

const (
	seqTrials  = 200
	seqHorizon = 600
	seqSigma   = 0.3 // log-sd: a TTFT with some queueing
)

// lognormalQuantile is the p-quantile of exp(σZ).
func lognormalQuantile(p, sigma float64) float64 { return math.Exp(sigma * normalQuantile(p)) }

// sortedInsert inserts v into the sorted slice s.
func sortedInsert(s []float64, v float64) []float64 {
	i, _ := slices.BinarySearch(s, v)
	return slices.Insert(s, i, v)
}

// fixedQuantileMiss reports whether the textbook fixed-n interval of the
// p-quantile (order statistics at n·p ± z·√(n·p(1−p))) misses q.
func fixedQuantileMiss(x []float64, p, q, conf float64) bool {
	n := float64(len(x))
	h := normalQuantile(1-(1-conf)/2) * math.Sqrt(n*p*(1-p))
	lo, hi := int(math.Floor(n*p-h)), int(math.Ceil(n*p+h))
	return lo >= 1 && hi < len(x) && (q < x[lo-1] || q >= x[hi])
}

func TestQuantileSequenceCoversAtEveryLook(t *testing.T) {
	for _, p := range []float64{0.5, 0.95} {
		q := lognormalQuantile(p, seqSigma)
		missed, missedFixed := 0, 0
		for trial := range seqTrials {
			r := rand.New(rand.NewPCG(uint64(trial), 7))
			var x []float64
			miss, missFixed := false, false
			for range seqHorizon {
				x = sortedInsert(x, math.Exp(seqSigma*r.NormFloat64()))
				iv := QuantileSequence(x, p, 0.95)
				miss = miss || q < iv.Lo || q >= iv.Hi
				missFixed = missFixed || fixedQuantileMiss(x, p, q, 0.95)
			}
			if miss {
				missed++
			}
			if missFixed {
				missedFixed++
			}
		}
		// Nominal ≤ 10 of 200; 16 leaves room for chance (P(X > 16) <
		// 1% at 5%). Looking 600 times at a fixed interval misses in 12%
		// (p95) to 37% (p50) of trials, and must fail the same bound.
		if missed > 16 || missedFixed <= 16 {
			t.Errorf("p=%v: the sequence missed in %d of %d trials (want ≤ 16); the fixed interval at every look in %d (want > 16)",
				p, missed, seqTrials, missedFixed)
		}
		t.Logf("p=%v: sequence missed %d of %d trials, fixed interval looked at %d times missed %d", p, missed, seqTrials, seqHorizon, missedFixed)
	}
}

func TestShareSequenceCoversAtEveryLook(t *testing.T) {
	for _, theta := range []float64{0.5, 0.95} {
		missed, missedFixed := 0, 0
		for trial := range seqTrials {
			r := rand.New(rand.NewPCG(uint64(trial), 11))
			k := 0
			miss, missFixed := false, false
			for n := 1; n <= seqHorizon; n++ {
				if r.Float64() < theta {
					k++
				}
				lo, hi := ShareSequence(k, n, 0.95)
				miss = miss || theta < lo || theta > hi
				wlo, whi := Wilson(float64(k), float64(n), 0.95)
				missFixed = missFixed || theta < wlo || theta > whi
			}
			if miss {
				missed++
			}
			if missFixed {
				missedFixed++
			}
		}
		if missed > 16 || missedFixed <= 16 {
			t.Errorf("θ=%v: the sequence missed in %d of %d trials (want ≤ 16); Wilson at every look in %d (want > 16)",
				theta, missed, seqTrials, missedFixed)
		}
		t.Logf("θ=%v: sequence missed %d of %d, Wilson at every look %d", theta, missed, seqTrials, missedFixed)
	}
}

// The mean's sequence is asymptotic: it is held to its promise on a
// lognormal (skewed) latency from MinAnytimeMeanSamples on.
func TestMeanSequenceCoversAtEveryLook(t *testing.T) {
	mu := math.Exp(seqSigma * seqSigma / 2)
	missed, missedFixed := 0, 0
	for trial := range seqTrials {
		r := rand.New(rand.NewPCG(uint64(trial), 13))
		var x []float64
		sum, ss := 0.0, 0.0
		miss, missFixed := false, false
		for n := 1; n <= seqHorizon; n++ {
			v := math.Exp(seqSigma * r.NormFloat64())
			x = append(x, v)
			sum += v
			ss += v * v
			if n < MinAnytimeMeanSamples {
				continue
			}
			iv, ok := AnytimeInterval(Mean(), Sample{Values: x}, 0.95)
			miss = miss || !ok || mu < iv.Lo || mu > iv.Hi
			m := sum / float64(n)
			half := 1.96 * math.Sqrt((ss/float64(n)-m*m)/float64(n))
			missFixed = missFixed || mu < m-half || mu > m+half
		}
		if miss {
			missed++
		}
		if missFixed {
			missedFixed++
		}
	}
	if missed > 16 || missedFixed <= 16 {
		t.Errorf("mean: the sequence missed in %d of %d trials (want ≤ 16); the normal interval at every look in %d (want > 16)", missed, seqTrials, missedFixed)
	}
	t.Logf("mean: sequence missed %d of %d, fixed interval at every look %d", missed, seqTrials, missedFixed)
}

// QuantileSequence finds the accepted counts by bisection; a scan of every
// count must agree.
func TestQuantileSequenceMatchesScan(t *testing.T) {
	scan := func(x []float64, p, conf float64) Interval {
		n := len(x)
		kLo, kHi := -1, -1
		for k := 0; k <= n; k++ {
			if betaBinomialLogRatio(k, n, p, quantilePrior*p, quantilePrior*(1-p)) < math.Log(1/(1-conf)) {
				if kLo < 0 {
					kLo = k
				}
				kHi = k
			}
		}
		out := Interval{math.Inf(-1), math.Inf(1)}
		if kLo >= 1 {
			out.Lo = x[kLo-1]
		}
		if kHi < n {
			out.Hi = x[kHi]
		}
		return out
	}
	for _, n := range []int{1, 5, 19, 80, 81, 333, 334, 2000} {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i + 1)
		}
		for _, p := range []float64{0.5, 0.9, 0.95, 0.99} {
			for _, conf := range []float64{0.9, 0.95, 0.999} {
				if got, want := QuantileSequence(x, p, conf), scan(x, p, conf); got != want {
					t.Errorf("n=%d p=%v conf=%v: %v, a scan gives %v", n, p, conf, got, want)
				}
			}
		}
	}
}

// The first counts at which an upper limit exists (all requests below a
// threshold can decide the check), as the tuning's comment and
// docs/statistics.md state them.
func TestQuantileSequenceFirstDecision(t *testing.T) {
	for _, c := range []struct {
		p     float64
		first int
	}{{0.5, 12}, {0.95, 81}, {0.99, 334}} {
		first := 0
		for n := 1; n < 1000 && first == 0; n++ {
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(i)
			}
			if !math.IsInf(QuantileSequence(x, c.p, 0.95).Hi, 1) {
				first = n
			}
		}
		if first != c.first {
			t.Errorf("p=%v: the first upper limit comes at %d requests, want %d", c.p, first, c.first)
		}
	}
}

func TestAnytimeIntervalKinds(t *testing.T) {
	vals := make([]float64, 40)
	for i := range vals {
		vals[i] = float64(i)
	}
	if _, ok := AnytimeInterval(Rate(), Sample{Values: vals, Wall: 1}, 0.95); ok {
		t.Error("a rate has no confidence sequence")
	}
	if _, ok := AnytimeInterval(Mean(), Sample{Values: vals[:MinAnytimeMeanSamples-1]}, 0.95); ok {
		t.Errorf("a mean of %d values has none", MinAnytimeMeanSamples-1)
	}
	if iv, ok := AnytimeInterval(Mean(), Sample{Values: vals}, 0.95); !ok || !(iv.Lo < 19.5 && iv.Hi > 19.5) {
		t.Errorf("mean of 0..39: %v %v", iv, ok)
	}
	if lo, hi := ShareSequence(0, 200, 0.95); lo != 0 || !(hi > 0 && hi < 0.05) {
		t.Errorf("0 of 200: [%v, %v], want [0, below 5%%]", lo, hi)
	}
	if lo, hi := ShareSequence(200, 200, 0.95); hi != 1 || !(lo > 0.95 && lo < 1) {
		t.Errorf("200 of 200: [%v, %v], want [above 95%%, 1]", lo, hi)
	}
	if _, ok := AnytimeInterval(Percentile(0.95), Sample{}, 0.95); ok {
		t.Error("a percentile of nothing")
	}
}
