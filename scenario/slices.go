package scenario

import "time"

// The bounds of a stage's slices: below a second a slice holds too few
// requests for its percentiles, and the level record keeps a histogram of
// inter-token gaps per slice (result.MaxITLSlices of them at most).
const (
	MinSlice = time.Second
	MaxSlice = time.Hour
)
