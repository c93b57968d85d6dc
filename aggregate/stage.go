package aggregate

import (
	"slices"
	"sync"

	"github.com/runnerbench/runner/result"
)

// Stage assembles one stage's result from its records as they arrive: the
// stage's record, then each level's record at its start, its requests as
// they finish, and its record again at its end. A live run feeds it from the
// load stage; `runner report` and `runner merge` feed it from files; either
// way the points come from the same code, so they are the same.
//
// Its methods match runner.Sink's, so a Stage is a sink for a run that keeps
// nothing on disk.
type Stage struct {
	limit int

	mu     sync.RWMutex
	info   result.StageRecord
	levels map[int]*Level
	points []result.Point
	// samples holds each point's per-request samples by its label, when
	// kept (KeepSamples).
	samples map[string]*Samples
	// prefixOnPurpose: a level of the stage caches prefixes on purpose
	// (LevelSpec.ExpectPrefixHits).
	prefixOnPurpose bool
}

// ExpectsPrefixHits reports whether the stage's levels share prefixes on
// purpose (shared prefixes, conversations, a trace's), so prefix-cache hits
// are no fault of the measurement.
func (s *Stage) ExpectsPrefixHits() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.prefixOnPurpose
}

// KeepSamples makes the stage keep every level's per-request samples, for
// comparing the run with another (Samples); call it before the first level.
func (s *Stage) KeepSamples() {
	s.mu.Lock()
	s.samples = map[string]*Samples{}
	s.mu.Unlock()
}

// Samples returns the per-request samples of the point labelled label (a
// level, or a turn of a multi-turn level), or nil: not kept, no such level.
func (s *Stage) Samples(label string) *Samples {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.samples[label]
}

// NewStage starts a stage; exactLimit is Level's (0: the default).
func NewStage(exactLimit int) *Stage {
	return &Stage{limit: exactLimit, levels: map[int]*Level{}}
}

// StageStarted sets what the stage measured and how.
func (s *Stage) StageStarted(st *result.StageRecord) {
	s.mu.Lock()
	s.info = *st
	s.mu.Unlock()
}

// LevelStarted opens a level.
func (s *Stage) LevelStarted(rec *result.LevelRecord) {
	l := NewLevel(rec.Spec, s.limit)
	if len(rec.Parts) > 0 {
		l.trackShards()
	}
	if s.samples != nil {
		l.KeepSamples()
	}
	s.mu.Lock()
	s.levels[rec.Level] = l
	s.prefixOnPurpose = s.prefixOnPurpose || rec.Spec.ExpectPrefixHits
	s.mu.Unlock()
}

// Request adds a measured request to its level; warm-ups, and requests of a
// level not opened, are ignored.
func (s *Stage) Request(r *result.Request) {
	if r.Warmup {
		return
	}
	s.mu.RLock()
	l := s.levels[r.Level]
	s.mu.RUnlock()
	if l != nil {
		l.Add(r)
	}
}

// Telemetry adds a telemetry read to its level (by its Level; reads of
// another stage, or of a level not opened, are ignored).
func (s *Stage) Telemetry(r *result.TelemetryScrape) {
	s.mu.RLock()
	l := s.levels[r.Level]
	name := s.info.Name
	s.mu.RUnlock()
	if l != nil && r.Stage == name {
		l.AddTelemetry(r)
	}
}

// LevelDone closes a level: its point, and its parts' points (per turn,
// per model, the probe requests'), join the stage's. It returns the
// level's point.
func (s *Stage) LevelDone(rec *result.LevelRecord) result.Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.levels[rec.Level]
	if l == nil {
		l = NewLevel(rec.Spec, s.limit)
	}
	p := l.Point(rec)
	parts := l.Parts(rec)
	s.points = append(append(s.points, p), parts...)
	if all, perPart := l.Samples(rec); s.samples != nil && all != nil {
		s.samples[p.Label()] = all
		for i := range parts {
			s.samples[parts[i].Label()] = perPart[i]
		}
	}
	delete(s.levels, rec.Level) // its numbers are in the points (and samples) now
	return p
}

// Peek is a level in progress's point and samples so far (see
// Level.Peek); false when the level is not open.
func (s *Stage) Peek(rec *result.LevelRecord) (result.Point, *Samples, bool) {
	s.mu.RLock()
	l := s.levels[rec.Level]
	s.mu.RUnlock()
	if l == nil {
		return result.Point{}, nil, false
	}
	p, smp := l.Peek(rec)
	return p, smp, true
}

// Error records that the stage could not run, or stopped early.
func (s *Stage) Error(msg string) {
	s.mu.Lock()
	s.info.Error = msg
	s.mu.Unlock()
}

// Result is the stage's result so far (checks not evaluated).
func (s *Stage) Result() *result.Stage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &result.Stage{
		Name:     s.info.Name,
		Endpoint: s.info.Endpoint,
		API:      s.info.API,
		Mode:     s.info.Mode,
		Load:     s.info.Load,
		Trace:    s.info.Trace,
		Points:   append([]result.Point{}, s.points...),
		Checks:   []result.CheckOutcome{},
		Warnings: slices.Clone(s.info.Warnings),
		Error:    s.info.Error,
	}
}
