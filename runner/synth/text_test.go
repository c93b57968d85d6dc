package synth

import (
	"context"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestNonceUnique(t *testing.T) {
	hex := regexp.MustCompile(`^[0-9a-f]{12}$`)
	g1, g2 := NewNonces(), NewNonces()
	seen := make(map[string]bool, 200_000)
	for range 100_000 {
		n := g1.Next()
		if !hex.MatchString(n) {
			t.Fatalf("nonce %q is not 12 hex digits", n)
		}
		if seen[n] {
			t.Fatalf("nonce %q repeated", n)
		}
		seen[n] = true
	}
	// A second run's generator (new key) must not replay the first run's nonces.
	same := 0
	for range 100_000 {
		if seen[g2.Next()] {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("%d of a second generator's nonces repeat the first's", same)
	}
}

// TestFillerAndSizer: a filler body is n words of the vocabulary, in order,
// whatever lengths were asked before; a sizer turns tokens into words by its
// calibration, and the reference's by tokens / 0.75.
func TestFillerAndSizer(t *testing.T) {
	for _, n := range []int{1, 5, 36, 37, 5000, 3} {
		words := strings.Fields(Filler(n))
		if len(words) != n {
			t.Fatalf("Filler(%d) has %d words", n, len(words))
		}
		for i, w := range words {
			if w != Vocabulary[i%len(Vocabulary)] {
				t.Fatalf("Filler(%d) word %d is %q", n, i, w)
			}
		}
	}
	if Filler(0) != "" {
		t.Fatal("Filler(0) is not empty")
	}
	s := &Sizer{Overhead: 10, PerWord: 1.25}
	if got := s.Words(135); got != 100 {
		t.Fatalf("Words(135) = %d with 10 overhead and 1.25 a word, want 100", got)
	}
	if got := s.Words(1); got != 1 {
		t.Fatalf("Words(1) = %d, want at least one word", got)
	}
	ref := &Sizer{Reference: true}
	if ref.Words(300) != 400 || ref.TokensPerWord() != 0.75 || ReferenceWords(300) != 400 {
		t.Fatalf("reference sizing: %d words for 300 tokens", ref.Words(300))
	}
}

// TestCalibrateWithinWhatTheServerTakes: a server that refuses prompts
// over 512 tokens (llama-server embedding with its default batch: 500
// "input is too large to process") still calibrates, from the longest
// prompt it takes, to its true cost per word; one that takes nothing does
// not calibrate at all.
func TestCalibrateWithinWhatTheServerTakes(t *testing.T) {
	const perWord, overhead = 1.31, 4.0
	var longest int
	count := func(_ context.Context, text string) (int, error) {
		n := int(math.Round(overhead + perWord*float64(len(strings.Fields(text))-1))) // the nonce is a word of its own
		if n > 512 {
			return 0, errors.New("http 500: input is too large to process. increase the physical batch size")
		}
		longest = max(longest, n)
		return n, nil
	}
	o, w, err := Calibrate(context.Background(), count)
	if err != nil || math.Abs(w-perWord) > 0.01 || math.Abs(o-overhead) > 1 || longest > 512 {
		t.Fatalf("overhead %v, per word %v (want %v), err %v; longest prompt %d tokens", o, w, perWord, err, longest)
	}
	s := Sizer{Overhead: o, PerWord: w}
	if got := overhead + perWord*float64(s.Words(128)); math.Abs(got-128) > 2 {
		t.Errorf("a 128-token prompt is %v tokens", got)
	}
	refuse := func(context.Context, string) (int, error) { return 0, errors.New("http 500") }
	if _, _, err := Calibrate(context.Background(), refuse); err == nil {
		t.Error("a server that takes nothing calibrated")
	}
}
