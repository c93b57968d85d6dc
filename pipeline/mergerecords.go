package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// entries are the merged run.jsonl: the run's header, each stage with its
// checks, its merged levels and its end, and the run's end. A single
// shard's records are kept as they are (a level it was killed in cut as
// Recompute cuts it), so its merge reports exactly what it did.
func (s *Shards) entries(cuts []map[*result.LevelRecord]*time.Time) []records.Entry {
	out := []records.Entry{{Kind: records.KindRun, Run: s.header()}}
	for i := range s.runs[0].run.Stages {
		out = append(out, s.stageEntries(i, cuts)...)
	}
	if end := s.end(); end != nil {
		out = append(out, records.Entry{Kind: records.KindEnd, End: end})
	}
	return out
}

// header is the first shard's, started when the first shard started, and no
// longer any one shard's.
func (s *Shards) header() *records.Header {
	h := s.runs[0].run.Header
	h.Shard = nil
	for _, r := range s.runs {
		if r.run.Header.StartedAt.Before(h.StartedAt) {
			h.StartedAt = r.run.Header.StartedAt
		}
	}
	if len(s.runs) > 1 {
		h.Shards = len(s.runs)
		h.Labels, h.Host = s.labels(), s.hosts()
	}
	return &h
}

// labels are the labels every shard gives the same value: one the shards
// disagree on (a pod's own name) says nothing of the merged run.
func (s *Shards) labels() result.Labels {
	var out result.Labels
	for k, v := range s.runs[0].run.Header.Labels {
		same := true
		for _, r := range s.runs[1:] {
			if w, ok := r.run.Header.Labels[k]; !ok || w != v {
				same = false
			}
		}
		if same {
			out = out.With(result.Labels{k: v})
		}
	}
	return out
}

// hosts are the shards' hosts, distinct, sorted, joined with ", ".
func (s *Shards) hosts() string {
	var hs []string
	for _, r := range s.runs {
		if h := r.run.Header.Host; h != "" && !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	slices.Sort(hs)
	return strings.Join(hs, ", ")
}

// stageEntries are stage i's entries: its record (the shards' warnings
// together), its checks, its merged levels, and its end.
func (s *Shards) stageEntries(i int, cuts []map[*result.LevelRecord]*time.Time) []records.Entry {
	first := s.runs[0].run.Stages[i]
	rec := first.Record
	var done *records.StageDone
	for k, r := range s.runs {
		sr := r.run.Stages[i]
		if k > 0 {
			rec.Warnings = appendNew(rec.Warnings, sr.Record.Warnings...)
		}
		if sr.Done != nil {
			if done == nil {
				done = &records.StageDone{Name: sr.Done.Name}
			}
			if e := sr.Done.Error; e != "" {
				done.Error = joinLine(done.Error, s.who(k)+e)
			}
			done.Interrupted = done.Interrupted || sr.Done.Interrupted
		}
	}
	if rec.Error != "" && len(s.runs) > 1 {
		rec.Error = ""
		for k, r := range s.runs {
			if e := r.run.Stages[i].Record.Error; e != "" {
				rec.Error = joinLine(rec.Error, s.who(k)+e)
			}
		}
	}
	out := []records.Entry{{Kind: records.KindStage, Stage: &rec, Checks: first.Checks}}
	for j := range levels(first) {
		parts := make([]*result.LevelRecord, len(s.runs))
		for k, r := range s.runs {
			sr := r.run.Stages[i]
			parts[k] = levels(sr)[j]
			if parts[k] == sr.Started {
				parts[k] = killedLevel(sr.Started, cuts[k][sr.Started])
			}
		}
		out = append(out, records.Entry{Kind: records.KindLevel, Level: mergeLevel(parts)})
	}
	if done != nil {
		out = append(out, records.Entry{Kind: records.KindStageDone, StageDone: done})
	}
	return out
}

// who prefixes what shard k said, when there are several.
func (s *Shards) who(k int) string {
	if len(s.runs) == 1 {
		return ""
	}
	return fmt.Sprintf("shard %d: ", k)
}

// mergeLevel is one level's record from its shards' records (by shard
// index): the window is the union of the shards' windows (skipped shards
// had none), ITL all their gaps, the server's counters the lowest-index
// shard's that has them (never summed: the server is shared), cap waits
// summed, interrupted if any shard was; Parts keeps each shard's window and
// client load. One shard's record is the level's record.
func mergeLevel(parts []*result.LevelRecord) *result.LevelRecord {
	if len(parts) == 1 {
		return parts[0]
	}
	first := parts[0]
	m := &result.LevelRecord{Stage: first.Stage, Level: first.Level, Spec: first.Spec}
	for k, p := range parts {
		m.Parts = append(m.Parts, result.LevelPart{
			Shard: k, Skipped: p.Skipped, Start: p.Start, End: p.End, WallNs: p.WallNs,
			LateStartMs: p.LateStartMs, Client: p.Client, CapWaits: p.CapWaits,
		})
		m.ITL.Merge(&p.ITL)
		m.CapWaits += p.CapWaits
		m.Unsent += p.Unsent
		m.Interrupted = m.Interrupted || p.Interrupted
		if p.Skipped {
			continue
		}
		if m.Start.IsZero() || p.Start.Before(m.Start) {
			m.Start = p.Start
		}
		if p.End.After(m.End) {
			m.End = p.End
		}
		m.LateStartMs = max(m.LateStartMs, p.LateStartMs)
		if m.Server == nil && p.Server != nil {
			m.Server = p.Server
		}
	}
	m.WallNs = int64(m.End.Sub(m.Start))
	m.ITLSlices = mergeITLSlices(m, parts)
	return m
}

// mergeITLSlices adds up the shards' inter-token gaps by slice, on the
// merged window's slices: a shard's slice k is the merged slice k plus its
// window's offset from the merged opening in whole slices (the offset's
// remainder, a scheduled start's lateness of a few ms, shifts its gaps by
// less than a slice).
func mergeITLSlices(m *result.LevelRecord, parts []*result.LevelRecord) []result.ITL {
	w := m.Spec.SliceNs
	if w <= 0 {
		return nil
	}
	var out []result.ITL
	for _, p := range parts {
		if p.Skipped {
			continue
		}
		shift := int(int64(p.Start.Sub(m.Start)) / w)
		for k := range p.ITLSlices {
			i := k + shift
			if i < 0 || i >= result.MaxITLSlices {
				continue
			}
			for len(out) <= i {
				out = append(out, result.ITL{})
			}
			out[i].Merge(&p.ITLSlices[k])
		}
	}
	return out
}

// end is how the merged run ended: when its last shard ended, and
// interrupted (or in error) when any shard was; nil for one shard's records
// that have no end.
func (s *Shards) end() *records.End {
	if len(s.runs) == 1 {
		return s.runs[0].run.End
	}
	end := &records.End{StopReason: result.StopCompleted}
	rank := map[string]int{result.StopCompleted: 0, result.StopError: 1, result.StopInterrupted: 2}
	for k, r := range s.runs {
		e := r.run.End
		if e == nil {
			end.StopReason = result.StopInterrupted
			end.Warnings = append(end.Warnings, fmt.Sprintf("shard %d's records end without its end: it was killed or crashed, and the merge covers what it recorded", k))
			continue
		}
		if e.EndedAt.After(end.EndedAt) {
			end.EndedAt = e.EndedAt
		}
		if rank[e.StopReason] > rank[end.StopReason] {
			end.StopReason = e.StopReason
		}
		for _, w := range e.Warnings {
			end.Warnings = append(end.Warnings, s.who(k)+w)
		}
	}
	return end
}

// appendNew appends the values of add that list does not hold yet.
func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list
}

func joinLine(a, b string) string {
	if a == "" {
		return b
	}
	return strings.Join([]string{a, b}, "; ")
}
