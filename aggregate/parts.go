package aggregate

import "github.com/runnerbench/runner/result"

// A level's parts: the populations that report a point of their own beside
// the level's, keyed as the point's label keys them (result.PartKey). A
// request of a multi-turn level belongs to its turn's part; one of a stage
// that spreads its requests over several models to its model's; a probe
// request (result.Request.ProbeRequest) to the probe requests' part alone,
// never to the level's own population. A new kind of part is a key field,
// its case in has, and its parts in partsOf.

// levelPart is one part of a level: its key, the spec its point is judged
// against, and its population.
type levelPart struct {
	key  result.PartKey
	spec result.LevelSpec
	a    *acc
	keep *Samples // its per-request samples, when kept
}

// has reports whether request r belongs to the part.
func (pt *levelPart) has(r *result.Request) bool {
	switch {
	case pt.key.ProbeRequests:
		return r.ProbeRequest
	case r.ProbeRequest:
		return false
	case pt.key.Turn > 0:
		return r.Turn == pt.key.Turn
	}
	return r.Model == pt.key.Model
}

func (pt *levelPart) add(r *result.Request) {
	pt.a.add(r, &pt.spec)
	if pt.keep != nil {
		pt.keep.add(r)
	}
}

// partsOf are a level's parts, in the order their points follow the
// level's: its turns, its models, its probe requests.
func partsOf(spec result.LevelSpec, limit int) []*levelPart {
	var out []*levelPart
	add := func(k result.PartKey, s result.LevelSpec) {
		a := newAcc(limit)
		a.spilled = true // a part's point has no peak in flight: keep no spans
		out = append(out, &levelPart{key: k, spec: s, a: a})
	}
	if spec.Turns > 1 {
		for t := range spec.Turns {
			add(result.PartKey{Turn: t + 1}, spec)
		}
	}
	for _, m := range spec.Models {
		add(result.PartKey{Model: m}, spec)
	}
	if pr := spec.Probes; pr != nil {
		add(result.PartKey{ProbeRequests: true}, pr.Spec(spec))
	}
	return out
}
