package promptfile

import (
	"strings"
	"testing"
)

// TestReservoirHeldLimit: a sample whose text would pass the held limit is
// refused, not held.
func TestReservoirHeldLimit(t *testing.T) {
	fe := &Errors{}
	r := newReservoir(3, 1, fe)
	for range 4 {
		r.add(Prompt{Text: strings.Repeat("x", MaxHeldBytes/2)})
	}
	if !r.tooBig || r.held != nil || r.seen != 4 {
		t.Fatalf("tooBig %v, held %d, seen %d", r.tooBig, len(r.held), r.seen)
	}
}
