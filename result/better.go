package result

import "github.com/runnerbench/runner/internal/stats"

// Direction is b as the statistics package judges a change: the one place
// the catalogue's directions meet stats.Direction's. A neutral metric is
// compared as lower-is-better, its verdict never counted for or against.
func (b Better) Direction() stats.Direction {
	if b == HigherIsBetter {
		return stats.HigherIsBetter
	}
	return stats.LowerIsBetter
}
