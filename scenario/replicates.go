package scenario

// MaxReplicates bounds a stage's replicates per level.
const MaxReplicates = 1_000

// stageReplicates checks replicates: only a closed loop's levels are
// restarted as replicates, and each replicate must hold at least one wave,
// or it would be labelled with a load it never ran.
func (v *validator) stageReplicates(path string, s *Stage, ps *PromptSet) {
	rp := path + ".replicates"
	if s.Replicates == 0 && !v.has(rp) {
		return
	}
	k := s.Replicates
	switch {
	case k < 1 || k > MaxReplicates:
		v.errf(rp, "%s: replicates must be between 1 and %d, got %d", rp, MaxReplicates, k)
		return
	case len(s.Concurrency) == 0:
		v.errf(rp, "%s: replicates applies to concurrency (closed-loop) stages only: an open loop's schedule, a search's probes and a trace's replay are not restarted", rp)
		return
	case ps != nil && ps.Turns > 1:
		v.errf(rp, "%s: replicates does not apply to conversations (prompt set %q has turns: %d)", rp, s.Prompts, ps.Turns)
		return
	}
	for i, c := range s.Concurrency {
		n := s.Requests.At(i)
		if n <= 0 || n >= k*c || c > MaxConcurrency {
			continue // the default (a wave a replicate), enough, or refused already
		}
		v.errf(rp, "%s: level c=%d's %d requests make replicates of %d, fewer than its concurrency: a replicate would be labelled with a load it never ran; give the level at least %d requests (%d × %d), or fewer replicates", rp, c, n, n/k, k*c, k, c)
		return
	}
}
