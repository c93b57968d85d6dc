// Package synthrun writes synthetic result directories for tests and
// benchmarks of what reads many runs (the results database, history): a
// closed-loop run of given levels, with seeded log-normal latencies whose
// median the caller sets per run, so a test knows which runs changed and by
// how much. The records are the real formats (records' types, one JSON line
// each), and report.json is recomputed from them by the pipeline, so every
// number in it is one a real run's records would give.
package synthrun

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/reporters"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Spec is one synthetic run.
type Spec struct {
	Plan      string // the plan's name (default "nightly")
	StartedAt time.Time
	Seed      uint64
	// Concurrency lists the levels (default [4]); Requests is each level's
	// measured requests (default 200).
	Concurrency []int
	Requests    int
	// TTFTMs and TPOTMs are the medians (defaults 100 and 10); Sigma the
	// log-normal spread (default 0.25).
	TTFTMs, TPOTMs, Sigma float64
	// Labels are the run's labels (written where this Runner keeps them).
	Labels map[string]string
	// Endpoint is where the run says it sent its requests (default: the
	// built-in simulator, model "synthetic").
	Endpoint result.Endpoint
	// NoReport leaves report.json out (the records alone).
	NoReport bool
}

func (s *Spec) defaults() {
	if s.Plan == "" {
		s.Plan = "nightly"
	}
	if len(s.Concurrency) == 0 {
		s.Concurrency = []int{4}
	}
	if s.Requests == 0 {
		s.Requests = 200
	}
	if s.TTFTMs == 0 {
		s.TTFTMs = 100
	}
	if s.TPOTMs == 0 {
		s.TPOTMs = 10
	}
	if s.Sigma == 0 {
		s.Sigma = 0.25
	}
	if s.StartedAt.IsZero() {
		s.StartedAt = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if s.Endpoint == (result.Endpoint{}) {
		s.Endpoint = result.Endpoint{Name: "sim", Model: "synthetic", Simulator: true}
	}
}

const outputTokens = 64

// WriteEngines writes, under root, three single runs of one load (400
// requests at concurrency 4) told apart by an "engine" label: "fast" (TPOT
// 5 ms) and two runs of "slow" (10 ms; other seeds, labelled night 1 and 2).
// The truth a board must find: fast on top and decided, the slow runs tied.
func WriteEngines(root string) error {
	for name, sp := range map[string]Spec{
		"fast":   {TPOTMs: 5, Seed: 1, Labels: map[string]string{"engine": "fast"}},
		"slow-1": {TPOTMs: 10, Seed: 2, Labels: map[string]string{"engine": "slow", "night": "1"}},
		"slow-2": {TPOTMs: 10, Seed: 3, Labels: map[string]string{"engine": "slow", "night": "2"}},
	} {
		sp.Requests, sp.Concurrency = 400, []int{4}
		if err := Write(filepath.Join(root, name), sp); err != nil {
			return err
		}
	}
	return nil
}

// Write writes the run's result directory dir: plan.yaml, run.jsonl,
// requests.jsonl and (unless NoReport) report.json.
func Write(dir string, s Spec) error {
	s.defaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	plan := []byte("version: 1\nname: " + strconv.Quote(s.Plan) + "\n")
	if err := os.WriteFile(filepath.Join(dir, records.FilePlan), plan, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(plan)
	reqs, err := os.Create(filepath.Join(dir, records.FileRequests))
	if err != nil {
		return err
	}
	defer reqs.Close()
	bw := bufio.NewWriterSize(reqs, 1<<20)
	enc := json.NewEncoder(bw)
	journal, err := records.NewJSONL(filepath.Join(dir, records.FileRun))
	if err != nil {
		return err
	}
	defer journal.Close()
	h := &records.Header{RunnerVersion: "synthetic", Plan: result.Plan{Name: s.Plan, Path: "plan.yaml", Hash: hex.EncodeToString(sum[:])},
		StartedAt: s.StartedAt, Stages: []string{"sweep"}}
	setLabels(h, s.Labels)
	check := &scenario.Check{Name: "fast first token", Expr: "ttft_p95_ms < 1000"}
	if err := check.Compile(); err != nil {
		return err
	}
	entries := []records.Entry{{Kind: records.KindRun, Run: h},
		{Kind: records.KindStage, Checks: []*scenario.Check{check}, Stage: &result.StageRecord{Name: "sweep", API: "chat", Mode: "pinned",
			Load: "concurrency", Endpoint: s.Endpoint}}}
	for _, e := range entries {
		if err := journal.Write(e); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	at := s.StartedAt
	for i, c := range s.Concurrency {
		rec, err := writeLevel(enc, rng, &s, i, c, at)
		if err != nil {
			return err
		}
		at = rec.End
		if err := journal.Write(records.Entry{Kind: records.KindLevel, Level: rec}); err != nil {
			return err
		}
	}
	for _, e := range []records.Entry{{Kind: records.KindStageDone, StageDone: &records.StageDone{Name: "sweep"}},
		{Kind: records.KindEnd, End: &records.End{EndedAt: at, StopReason: result.StopCompleted}}} {
		if err := journal.Write(e); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := journal.Close(); err != nil {
		return err
	}
	if s.NoReport {
		return nil
	}
	rep, err := pipeline.Recompute(dir, nil)
	if err != nil {
		return err
	}
	return reporters.WriteAll(dir, rep, []string{reporters.FormatJSON}, reporters.Options{})
}

// writeLevel writes one level's requests, c at a time back to back, and
// returns its record.
func writeLevel(enc *json.Encoder, rng *rand.Rand, s *Spec, level, c int, at time.Time) (*result.LevelRecord, error) {
	return genLevel(rng, s, level, c, at, func(r *result.Request) error { return enc.Encode(r) })
}

// Levels generates a run's levels in memory, as Write would write them
// (the same records and requests for the same Spec), and gives each level's
// record and measured requests to fn, in order; the run's files and
// report are not made. For tests that need many runs' levels fast.
func Levels(s Spec, fn func(rec *result.LevelRecord, reqs []*result.Request) error) error {
	s.defaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	at := s.StartedAt
	for i, c := range s.Concurrency {
		var reqs []*result.Request
		rec, err := genLevel(rng, &s, i, c, at, func(r *result.Request) error { reqs = append(reqs, r); return nil })
		if err != nil {
			return err
		}
		at = rec.End
		if err := fn(rec, reqs); err != nil {
			return err
		}
	}
	return nil
}

// genLevel makes one level's requests, c at a time back to back, gives
// each to emit and returns the level's record.
func genLevel(rng *rand.Rand, s *Spec, level, c int, at time.Time, emit func(*result.Request) error) (*result.LevelRecord, error) {
	rec := &result.LevelRecord{Stage: "sweep", Level: level, Start: at,
		Spec:   result.LevelSpec{Label: result.LevelLabel(c, nil, 0, 0), Concurrency: c, InputTokens: 128, OutputTokens: outputTokens, Pinned: true},
		Client: result.ClientLoad{CPUNs: int64(10 * time.Millisecond), Procs: 2}}
	free := make([]time.Time, c) // when each stream is next free
	for i := range free {
		free[i] = at
	}
	end := at
	for seq := range s.Requests {
		w := seq % c
		ttft := s.TTFTMs * math.Exp(s.Sigma*rng.NormFloat64())
		tpot := s.TPOTMs * math.Exp(s.Sigma*rng.NormFloat64())
		e2e := ttft + tpot*(outputTokens-1)
		start := free[w]
		free[w] = start.Add(time.Duration(e2e * float64(time.Millisecond)))
		end = maxTime(end, free[w])
		rec.ITL.Add(time.Duration(tpot * float64(time.Millisecond)))
		r := &result.Request{Stage: "sweep", Level: level, Concurrency: c, Seq: seq, Nonce: fmt.Sprintf("%012x", rng.Uint64()>>16),
			MaxTokens: outputTokens, Start: start, OK: true, TTFTMs: &ttft, TPOTMs: &tpot, E2EMs: e2e,
			InputTokens: 128, OutputTokens: outputTokens, Chunks: outputTokens, UsageReported: true, FinishReason: "length"}
		if err := emit(r); err != nil {
			return nil, err
		}
	}
	rec.End, rec.WallNs = end, int64(end.Sub(at))
	return rec, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
