//go:build race

package runner

// raceOn: the race detector slows every goroutine several times over, so
// timing-accuracy bounds are not asserted under it (correctness still is).
const raceOn = true
