package aggregate

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// TestSamplesAreThePointsPopulations: for every metric the catalogue
// compares, the statistic computed from the level's samples is the value its
// point reports (to the point's rounding), so a comparison's interval is
// about the number people read. A failed request counts in the rates' and
// shares' samples and in no latency's.
func TestSamplesAreThePointsPopulations(t *testing.T) {
	reqs := randomRequests(600, 3)
	for i, r := range reqs {
		if r.OK && i%3 == 0 {
			r.ServerTimings = &result.ServerTimings{PromptMs: *r.TTFTMs / 2}
		}
		if r.OK {
			r.TTFTFromScheduleMs, r.E2EFromScheduleMs = f(*r.TTFTMs+r.DispatchLagMs), f(r.E2EMs+r.DispatchLagMs)
		}
	}
	spec := Spec{Concurrency: 8, InputTokens: 120, OutputTokens: 300, SLO: &SLO{TTFTMs: 30}}
	st := NewStage(0)
	st.KeepSamples()
	lspec := newLevel(spec).spec
	rec := &result.LevelRecord{Level: 0, Spec: lspec, Start: t0, End: t0.Add(9 * time.Second), WallNs: int64(9 * time.Second)}
	st.LevelStarted(rec)
	for _, r := range reqs {
		st.Request(r)
	}
	p := st.LevelDone(rec)
	s := st.Samples(p.Label())
	if s == nil {
		t.Fatal("no samples kept")
	}
	checked := 0
	for _, m := range result.Metrics() {
		if !m.Comparable() {
			continue
		}
		want, ok := m.Value(&p)
		if !ok {
			continue
		}
		got := statOf(t, s.Sample(m.Compare.Sample), m.Compare.Statistic)
		if m.Name == "failed" {
			want /= float64(p.NRequests) // compared as the failed share
		} else {
			got = result.Round(got, m.Decimals)
		}
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: samples give %v, the point %v", m.Name, got, want)
		}
		checked++
	}
	if checked < 38 {
		t.Errorf("only %d comparable metrics had values", checked)
	}
	if s.Sample(result.SampleOutputTokens).Workers != 8 || len(s.Sample(result.SampleOutputTokens).Costs) != len(reqs) {
		t.Error("a closed loop's rate sample carries no costs and workers")
	}
}

// statOf is the statistic of one sample (a comparison with itself).
func statOf(t *testing.T, s stats.Sample, st stats.Statistic) float64 {
	t.Helper()
	d, err := stats.Compare(s, s, st, stats.LowerIsBetter, stats.Options{Resamples: 19, Confidence: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	return d.Base
}

// TestSamplesOrderFree: the samples, and so every interval drawn from them,
// do not depend on the order requests arrived in (a live run's workers race;
// its records are read back in file order).
func TestSamplesOrderFree(t *testing.T) {
	reqs := randomRequests(300, 4)
	spec := result.LevelSpec{Concurrency: 4, SLO: &SLO{TTFTMs: 30}}
	rec := &result.LevelRecord{Spec: spec, WallNs: int64(3 * time.Second)}
	collect := func(order []*result.Request) *Samples {
		l := NewLevel(spec, 0)
		l.KeepSamples()
		for _, r := range order {
			l.Add(r)
		}
		s, _ := l.Samples(rec)
		return s
	}
	ref := collect(reqs)
	shuffled := slices.Clone(reqs)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	got := collect(shuffled)
	for _, src := range []result.Sample{result.SampleTTFT, result.SampleOutputTokens, result.SamplePrefill, result.SampleGood, result.SampleStreamTPS} {
		if a, b := ref.Sample(src), got.Sample(src); !reflect.DeepEqual(a, b) {
			t.Errorf("sample %d depends on the order requests came in", src)
		}
	}
}

// TestSamplesOpenLoopAndTurns: an open loop's rate holds its wall fixed (no
// costs); a multi-turn level keeps one sample set per turn, under the turn
// point's label; a stage not asked keeps none.
func TestSamplesOpenLoopAndTurns(t *testing.T) {
	rate := 4.0
	l := NewLevel(result.LevelSpec{Rate: &rate, Concurrency: 16}, 0)
	l.KeepSamples()
	l.Add(ok(10, 100, 8, 5))
	s, _ := l.Samples(&result.LevelRecord{WallNs: int64(time.Second)})
	if rs := s.Sample(result.SampleOutputTokens); rs.Costs != nil || rs.Workers != 0 || rs.Wall != 1 {
		t.Errorf("open-loop rate sample %+v", rs)
	}

	spec := result.LevelSpec{Concurrency: 2, Turns: 2}
	st := NewStage(0)
	st.KeepSamples()
	rec := &result.LevelRecord{Spec: spec, WallNs: int64(time.Second)}
	st.LevelStarted(rec)
	for i := range 6 {
		r := ok(float64(10+i), 50, 4, 3)
		r.Turn, r.Seq = 1+i%2, i
		st.Request(r)
	}
	st.LevelDone(rec)
	for label, n := range map[string]int{"c=2": 6, "c=2 turn=1": 3, "c=2 turn=2": 3} {
		if s := st.Samples(label); s == nil || len(s.Sample(result.SampleTTFT).Values) != n {
			t.Errorf("%s: samples %v, want %d TTFTs", label, s, n)
		}
	}
	plain := NewStage(0)
	plain.LevelStarted(rec)
	plain.LevelDone(rec)
	if plain.Samples("c=2") != nil {
		t.Error("a stage not asked to keep samples kept them")
	}
}
