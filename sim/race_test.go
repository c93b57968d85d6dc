//go:build race

package sim

// raceEnabled is true under -race, where the big concurrency test shrinks: the
// race detector makes each request ~10× dearer on these 2-core machines.
const raceEnabled = true
