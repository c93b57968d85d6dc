//go:build !race

package runner

const raceOn = false
