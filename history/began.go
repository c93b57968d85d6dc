package history

import "math"

// Began is the run where the change marked at se.Points[i] (a point with
// Change set) began. The mark is found by a window of runs ending at that
// point, so the step itself may lie anywhere in the window, or before it
// when the windows before were too noisy to call: Began is the
// least-squares change point of the series from the start of the window's
// base (or the last change before it) to the mark, the split into runs
// before and from it whose two means leave the least squared error. For a
// step it is the step's first run; the window's judgement is unchanged.
func (h *History) Began(se *Series, i int) int {
	p := se.Points[i]
	if !p.Change {
		return p.Run
	}
	// The judgeable points the window and its base were drawn from.
	var idx []int
	for j := 0; j <= i; j++ {
		if se.Points[j].Judgeable {
			idx = append(idx, j)
		}
	}
	from := max(0, len(idx)-h.Window-h.Before)
	for k := len(idx) - 2; k > from; k-- {
		if se.Points[idx[k]].Change { // a change before this one: the series' level since
			from = k
			break
		}
	}
	best, at := math.Inf(1), p.Run
	for k := from + 1; k < len(idx); k++ {
		if sse := splitError(se, idx[from:k]) + splitError(se, idx[k:]); sse < best {
			best, at = sse, se.Points[idx[k]].Run
		}
	}
	return at
}

// splitError is the squared error of the points' values about their mean.
func splitError(se *Series, at []int) float64 {
	m := 0.0
	for _, j := range at {
		m += se.Points[j].Value
	}
	m /= float64(len(at))
	e := 0.0
	for _, j := range at {
		d := se.Points[j].Value - m
		e += d * d
	}
	return e
}
