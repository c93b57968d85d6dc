package shape

import (
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// A drawn think time is the seed's: the same plan gives the same pauses,
// within the bounds it was drawn from.
func TestThinkerDraws(t *testing.T) {
	tt := scenario.ThinkTime{Min: scenario.Duration(100 * time.Millisecond), Max: scenario.Duration(300 * time.Millisecond)}
	a, b := Thinker(tt, 7, 0), Thinker(tt, 7, 0)
	other := Thinker(tt, 8, 0)
	differ := 0
	for seq := range 50 {
		for turn := 1; turn <= 3; turn++ {
			x := a.Pause(seq, turn)
			if x != b.Pause(seq, turn) {
				t.Fatalf("conversation %d turn %d: two draws of one seed differ", seq, turn)
			}
			if x < 100*time.Millisecond || x > 300*time.Millisecond {
				t.Fatalf("think time %v outside [100ms, 300ms]", x)
			}
			if x != other.Pause(seq, turn) {
				differ++
			}
		}
	}
	if differ < 140 {
		t.Errorf("another seed drew the same think time %d times in 150", 150-differ)
	}
}
