package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// Merging. The shards of a sharded run each leave a result directory; Merge
// makes one of them, as one process running the whole plan would have left:
// the plan, every shard's requests, and one record per level whose window
// is the union of the shards' windows (earliest start to latest end), whose
// token gaps are all the shards' gaps, whose server counters are one
// shard's (the lowest index that read them: the server is shared, and every
// shard reads them just before the scheduled window opens and at the slot's
// end, when all shards' requests of the level are done, so each shard's
// delta covers the whole level and a sum would count it N times), and whose
// Parts keep each shard's window and client load. The
// report is then computed from that directory by Recompute, the code that
// `runner report` runs, so the merged report is a function of the merged
// records, and its percentiles are those of the union of the shards'
// requests (the aggregate does not depend on the order requests arrive in).

// ErrRefused marks a merge refused because its directories do not belong
// together: not a result directory, different plans or runner versions,
// shards missing or twice, levels that do not match.
var ErrRefused = errors.New("merge refused")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Shards are the result directories of one sharded run, read back and
// checked to belong together, by shard index.
type Shards struct {
	runs []*shardRun
}

// shardRun is one shard's result directory.
type shardRun struct {
	dir  string
	run  *records.Run
	part result.Shard
}

// ReadShards reads the result directories of a sharded run's shards, in any
// order, and checks that they are every shard of one run: the same plan
// (hash), runner version, stages, shard count and timetable, each index
// once, and the same levels in the same order. A result directory of an
// unsharded run is shard 0 of 1.
func ReadShards(dirs []string) (*Shards, error) {
	if len(dirs) == 0 {
		return nil, refuse("no shard directories given")
	}
	s := &Shards{}
	for _, dir := range dirs {
		run, err := records.ReadRun(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		part := result.Shard{Index: 0, Count: 1}
		if run.Header.Shard != nil {
			part = *run.Header.Shard
		}
		s.runs = append(s.runs, &shardRun{dir: dir, run: run, part: part})
	}
	slices.SortStableFunc(s.runs, func(a, b *shardRun) int { return a.part.Index - b.part.Index })
	if err := s.checkHeaders(); err != nil {
		return nil, err
	}
	if err := s.checkStages(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkHeaders refuses shards of different runs, and a run with shards
// missing or given twice.
func (s *Shards) checkHeaders() error {
	first := s.runs[0]
	fh := &first.run.Header
	count := first.part.Count
	for _, r := range s.runs[1:] {
		h := &r.run.Header
		switch {
		case h.Plan.Hash != fh.Plan.Hash:
			return refuse("%s and %s ran different plans (sha256 %.12s… and %.12s…)", first.dir, r.dir, fh.Plan.Hash, h.Plan.Hash)
		case h.RunnerVersion != fh.RunnerVersion:
			return refuse("%s and %s were run by different runner versions (%s and %s): their shards may not split levels alike", first.dir, r.dir, fh.RunnerVersion, h.RunnerVersion)
		case !slices.Equal(h.Stages, fh.Stages):
			return refuse("%s and %s ran different stages (%s and %s)", first.dir, r.dir, strings.Join(fh.Stages, ", "), strings.Join(h.Stages, ", "))
		case r.part.Count != count:
			return refuse("%s is shard %d/%d and %s shard %d/%d: shards of one run have one count", first.dir, first.part.Index, count, r.dir, r.part.Index, r.part.Count)
		case !sameSchedule(h, fh):
			return refuse("%s and %s were scheduled differently (--start-at %s and %s, or other slot settings): they did not run together", first.dir, r.dir, startAt(fh), startAt(h))
		}
	}
	seen := map[int]string{}
	for _, r := range s.runs {
		if d, ok := seen[r.part.Index]; ok {
			return refuse("%s and %s are both shard %d of %d", d, r.dir, r.part.Index, count)
		}
		seen[r.part.Index] = r.dir
	}
	var missing []string
	for i := range count {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return refuse("the run has %d shards and shard %s is missing (give every shard's directory)", count, strings.Join(missing, ", "))
	}
	return nil
}

func sameSchedule(a, b *records.Header) bool {
	return reflect.DeepEqual(a.StartAt, b.StartAt) && a.SlotWarmupNs == b.SlotWarmupNs && a.SlotDrainNs == b.SlotDrainNs
}

func startAt(h *records.Header) string {
	if h.StartAt == nil {
		return "none"
	}
	return h.StartAt.Format(time.RFC3339Nano)
}

// levels are a stage's level records as the run left them, a level it was
// killed in last (its window not yet cut: see killedLevel).
func levels(sr *records.StageRun) []*result.LevelRecord {
	out := slices.Clone(sr.Levels)
	if sr.Started != nil {
		out = append(out, sr.Started)
	}
	return out
}

// checkStages refuses shards whose stages or levels do not match: the same
// stages, measured alike, with the same levels (index and spec) in the
// same order.
func (s *Shards) checkStages() error {
	first := s.runs[0]
	for _, r := range s.runs[1:] {
		if len(r.run.Stages) != len(first.run.Stages) {
			return refuse("%s has %d stages recorded and %s %d: a shard stopped early (see its report's warnings)", first.dir, len(first.run.Stages), r.dir, len(r.run.Stages))
		}
		for i, sr := range r.run.Stages {
			fr := first.run.Stages[i]
			a, b := &fr.Record, &sr.Record
			if a.Name != b.Name || a.API != b.API || a.Mode != b.Mode || a.Load != b.Load || a.Endpoint.Name != b.Endpoint.Name || a.Endpoint.Model != b.Endpoint.Model {
				return refuse("stage %d of %s (%s) does not match %s's (%s)", i, r.dir, b.Name, first.dir, a.Name)
			}
			fl, rl := levels(fr), levels(sr)
			if len(fl) != len(rl) {
				return refuse("stage %s: %s recorded %d levels and %s %d: a shard stopped early (see its report's warnings)", a.Name, first.dir, len(fl), r.dir, len(rl))
			}
			for j := range fl {
				if fl[j].Level != rl[j].Level || !reflect.DeepEqual(fl[j].Spec, rl[j].Spec) {
					return refuse("stage %s: level %d of %s (%s) does not match %s's (%s)", a.Name, j, r.dir, rl[j].Spec.Label, first.dir, fl[j].Spec.Label)
				}
			}
		}
	}
	return nil
}

// Write writes the merged result directory into out (plan.yaml,
// requests.jsonl with every shard's requests, run.jsonl with the merged
// records) and returns its report, computed from what it wrote, checks
// evaluated once on the merged levels against base when given. out must
// not be one of the shards' directories.
func (s *Shards) Write(out string, base *Baseline) (*result.Report, error) {
	if err := s.CheckOut(out); err != nil {
		return nil, err
	}
	w, err := records.Create(out, s.runs[0].run.Plan)
	if err != nil {
		return nil, err
	}
	cuts, err := s.copyRequests(w)
	if err == nil {
		for _, e := range s.entries(cuts) {
			if err = w.Entry(e); err != nil {
				break
			}
		}
	}
	if err = errors.Join(err, w.Close()); err != nil {
		return nil, err
	}
	return Recompute(out, base)
}

// CheckOut refuses an output directory that is one of the shards': writing
// there would replace the records being merged. Check it before anything
// clears or writes out.
func (s *Shards) CheckOut(out string) error {
	for _, r := range s.runs {
		if sameDir(out, r.dir) {
			return refuse("--out %s is shard %d's own directory: merge into a new one", out, r.part.Index)
		}
	}
	return nil
}

// sameDir reports whether a and b name the same existing directory.
func sameDir(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	aa, _ := filepath.Abs(a)
	ab, _ := filepath.Abs(b)
	return aa == ab
}

// copyRequests appends every shard's requests to w, and returns, per
// shard, when the last finished request of a level it was killed in ended.
func (s *Shards) copyRequests(w *records.Writer) ([]map[*result.LevelRecord]*time.Time, error) {
	cuts := make([]map[*result.LevelRecord]*time.Time, len(s.runs))
	for i, r := range s.runs {
		cut := map[*result.LevelRecord]*time.Time{}
		err := records.EachRequest(r.dir, func(req *result.Request) error {
			noteCut(r.run, req, cut)
			return w.Request(req)
		})
		if err != nil {
			return nil, err
		}
		err = records.EachTelemetry(r.dir, func(t *result.TelemetryScrape) error { return w.Telemetry(t) })
		if err != nil {
			return nil, err
		}
		cuts[i] = cut
	}
	return cuts, nil
}
