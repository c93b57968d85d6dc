package pipeline

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// shardSpec is what one fake shard recorded.
type shardSpec struct {
	header records.Header
	levels []*result.LevelRecord
	// started is a level the shard was killed in (nil: none).
	started *result.LevelRecord
	reqs    []*result.Request
	end     *records.End
}

// fakeShard is shard i of n of a one-stage run of two levels (c=2, c=4):
// shard i sends requests i, i+n, ... of each level, each shard's window a
// little later than the last's, shard 0 without server counters.
func fakeShard(i, n int) *shardSpec {
	at := t0
	s := &shardSpec{
		header: records.Header{RunnerVersion: "v1", Plan: result.Plan{Name: "p", Path: "p.yaml", Hash: "abc"},
			StartedAt: t0.Add(-time.Duration(i) * time.Second), Stages: []string{"s"},
			Shard: &result.Shard{Index: i, Count: n}, StartAt: &at, SlotWarmupNs: 1, SlotDrainNs: 2},
		end: &records.End{EndedAt: t0.Add(time.Minute + time.Duration(i)*time.Second), StopReason: result.StopCompleted},
	}
	for lvl, conc := range []int{2, 4} {
		rec := &result.LevelRecord{Stage: "s", Level: lvl, Spec: result.LevelSpec{Label: "c=" + string(rune('0'+conc)), Concurrency: conc, OutputTokens: 8, Pinned: true},
			Shard: &result.Shard{Index: i, Count: n}, ShardConcurrency: conc / n}
		if conc/n == 0 && i >= conc%n {
			rec.Skipped = true
		} else {
			rec.Start = t0.Add(time.Duration(lvl)*time.Minute + time.Duration(i)*time.Millisecond)
			rec.End = rec.Start.Add(10*time.Second + time.Duration(i)*time.Second)
			rec.WallNs = int64(rec.End.Sub(rec.Start))
			rec.LateStartMs = float64(i)
			rec.CapWaits = int64(i)
			rec.Unsent = int64(2 * i)
			rec.Client = result.ClientLoad{CPUNs: int64(100 * time.Millisecond), Procs: 2}
			for g := range 5 {
				rec.ITL.Add(time.Duration(i*10+g+1) * time.Millisecond)
			}
			if i > 0 {
				v := float64(100 * (i + 1))
				rec.Server = &result.ServerDelta{Counters: map[string]float64{"vllm:prompt_tokens": v}}
			}
			for seq := i; seq < 20; seq += n {
				ttft := float64(10 + seq)
				s.reqs = append(s.reqs, &result.Request{Stage: "s", Level: lvl, Seq: seq, Shard: i, OK: true, Nonce: "n",
					Start: rec.Start.Add(time.Duration(seq) * time.Millisecond), TTFTMs: &ttft, E2EMs: 100 + float64(seq), OutputTokens: 8, MaxTokens: 8})
			}
		}
		s.levels = append(s.levels, rec)
	}
	return s
}

// write writes the shard's result directory.
func (s *shardSpec) write(t *testing.T, dir string) string {
	t.Helper()
	w, err := records.Create(dir, []byte("version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	check := &scenario.Check{Expr: "completed > 0"}
	entries := []records.Entry{{Kind: records.KindRun, Run: &s.header},
		{Kind: records.KindStage, Stage: &result.StageRecord{Name: "s", API: "chat", Mode: "pinned", Load: "concurrency",
			Endpoint: result.Endpoint{Name: "e", Model: "m"}}, Checks: []*scenario.Check{check}}}
	for _, l := range s.levels {
		entries = append(entries, records.Entry{Kind: records.KindLevel, Level: l})
	}
	if s.started != nil {
		entries = append(entries, records.Entry{Kind: records.KindLevelStart, Level: s.started})
	} else {
		entries = append(entries, records.Entry{Kind: records.KindStageDone, StageDone: &records.StageDone{Name: "s"}})
	}
	if s.end != nil {
		entries = append(entries, records.Entry{Kind: records.KindEnd, End: s.end})
	}
	for _, e := range entries {
		if err := w.Entry(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range s.reqs {
		if err := w.Request(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeShards(t *testing.T, n int, mutate func(i int, s *shardSpec)) []string {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for i := range n {
		s := fakeShard(i, n)
		if mutate != nil {
			mutate(i, s)
		}
		dirs = append(dirs, s.write(t, filepath.Join(root, "shard-"+string(rune('0'+i)))))
	}
	return dirs
}

// TestMergeRecords: the merged level's window is the union of the shards'
// (a skipped shard has none), its gaps all theirs, its server counters the
// lowest-index shard's that has them (never summed), its cap waits summed,
// and its parts each shard's; the report counts every shard's requests.
func TestMergeRecords(t *testing.T) {
	dirs := writeShards(t, 3, nil)
	sh, err := ReadShards([]string{dirs[2], dirs[0], dirs[1]}) // any order
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	rep, err := sh.Write(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := records.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	if run.Header.Shard != nil || run.Header.Shards != 3 || !run.Header.StartedAt.Equal(t0.Add(-2*time.Second)) {
		t.Errorf("merged header: %+v", run.Header)
	}
	if run.End == nil || !run.End.EndedAt.Equal(t0.Add(time.Minute+2*time.Second)) || run.End.StopReason != result.StopCompleted {
		t.Errorf("merged end: %+v", run.End)
	}
	c2, c4 := run.Stages[0].Levels[0], run.Stages[0].Levels[1]
	if !c2.Start.Equal(t0) || !c2.End.Equal(t0.Add(11*time.Second+time.Millisecond)) || c2.WallNs != int64(11*time.Second+time.Millisecond) {
		t.Errorf("c=2 window (shard 2 skipped): %v to %v, %d ns", c2.Start, c2.End, c2.WallNs)
	}
	if !c4.End.Equal(t0.Add(time.Minute+12*time.Second+2*time.Millisecond)) || c4.ITL.Count != 15 || c4.ITL.MaxNs != int64(25*time.Millisecond) || c4.CapWaits != 3 || c4.Unsent != 6 || c4.LateStartMs != 2 {
		t.Errorf("c=4: end %v, ITL %d max %d, cap waits %d, unsent %d, late %v", c4.End, c4.ITL.Count, c4.ITL.MaxNs, c4.CapWaits, c4.Unsent, c4.LateStartMs)
	}
	if c4.Server == nil || c4.Server.Counters["vllm:prompt_tokens"] != 200 {
		t.Errorf("server counters: %+v, want shard 1's alone", c4.Server)
	}
	if len(c2.Parts) != 3 || !c2.Parts[2].Skipped || c2.Parts[1].Shard != 1 || c2.Parts[1].CapWaits != 1 || c2.Shard != nil {
		t.Errorf("parts: %+v", c2.Parts)
	}
	if rep.Shards != 3 || rep.Shard != nil || len(rep.Stages) != 1 || len(rep.Stages[0].Points) != 2 {
		t.Fatalf("report: shards %d, %+v", rep.Shards, rep.Stages)
	}
	if p := rep.Stages[0].Points[1]; p.NRequests != 20 || p.Completed != 20 || *p.TTFTP50Ms != 20 {
		t.Errorf("c=4: %d requests, %d completed, ttft p50 %v", p.NRequests, p.Completed, *p.TTFTP50Ms)
	}
	if got := rep.Stages[0].Checks; len(got) != 2 || got[0].Status != result.StatusPass {
		t.Errorf("checks on the merged levels: %+v", got)
	}
}

// TestMergeOneShardIsTheRun: the merge of a single run's directory reports
// exactly what the run's records do.
func TestMergeOneShardIsTheRun(t *testing.T) {
	dir := writeShards(t, 1, func(_ int, s *shardSpec) { s.header.Shard = nil })[0]
	want, err := Recompute(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := ReadShards([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	got, err := sh.Write(filepath.Join(t.TempDir(), "m"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("merge of one run:\n%s\nthe run:\n%s", b, a)
	}
}

// TestMergeRefusals: directories that are not the shards of one run are
// refused, saying why.
func TestMergeRefusals(t *testing.T) {
	later := t0.Add(time.Hour)
	cases := []struct {
		name   string
		n      int
		mutate func(i int, s *shardSpec)
		drop   int // a shard's directory left out (-1: none)
		want   string
	}{
		{"plans", 2, func(i int, s *shardSpec) {
			if i == 1 {
				s.header.Plan.Hash = "def"
			}
		}, -1, "ran different plans"},
		{"versions", 2, func(i int, s *shardSpec) {
			if i == 1 {
				s.header.RunnerVersion = "v2"
			}
		}, -1, "different runner versions (v1 and v2)"},
		{"counts", 2, func(i int, s *shardSpec) {
			if i == 1 {
				s.header.Shard.Count = 3
			}
		}, -1, "shards of one run have one count"},
		{"twice", 2, func(i int, s *shardSpec) { s.header.Shard.Index = 0 }, -1, "are both shard 0 of 2"},
		{"missing", 3, nil, 1, "shard 1 is missing"},
		{"schedule", 2, func(i int, s *shardSpec) {
			if i == 1 {
				s.header.StartAt = &later
			}
		}, -1, "were scheduled differently"},
		{"levels", 2, func(i int, s *shardSpec) {
			if i == 1 {
				s.levels[1].Spec.Concurrency = 5
			}
		}, -1, "level 1 of"},
		{"stopped early", 2, func(i int, s *shardSpec) {
			if i == 1 {
				s.levels = s.levels[:1]
			}
		}, -1, "recorded 2 levels and"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dirs := writeShards(t, c.n, c.mutate)
			if c.drop >= 0 {
				dirs = append(dirs[:c.drop], dirs[c.drop+1:]...)
			}
			_, err := ReadShards(dirs)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a refusal saying %q", err, c.want)
			}
		})
	}
	dirs := writeShards(t, 2, nil)
	sh, err := ReadShards(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sh.Write(dirs[1], nil); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "shard 1's own directory") {
		t.Errorf("--out a shard's directory: %v", err)
	}
	if _, err := ReadShards([]string{t.TempDir()}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not a result directory") {
		t.Errorf("not a result directory: %v", err)
	}
}

// TestMergeKilledShard: a shard killed inside a level still counts its
// finished requests there, and the merged run is interrupted.
func TestMergeKilledShard(t *testing.T) {
	dirs := writeShards(t, 2, func(i int, s *shardSpec) {
		if i == 1 {
			s.end, s.started, s.levels = nil, s.levels[1], s.levels[:1]
		}
	})
	sh, err := ReadShards(dirs)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sh.Write(filepath.Join(t.TempDir(), "m"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Stages[0].Points[1]
	if rep.StopReason != result.StopInterrupted || !p.Interrupted || p.NRequests != 20 {
		t.Errorf("stop %s, level interrupted %v with %d requests", rep.StopReason, p.Interrupted, p.NRequests)
	}
	if c := rep.Stages[0].Checks[1]; c.Status != result.StatusSkipped {
		t.Errorf("check on the interrupted level: %+v", c)
	}
}
