// Package suggest finds the names a mistyped one was probably meant to be:
// the "did you mean" of every error message, said once.
package suggest

import (
	"fmt"
	"slices"
	"strings"
)

// Closest returns the candidate nearest to s by edit distance (case
// ignored) when it is near enough to be a likely typo, else "". A candidate
// that s is a prefix or suffix of ("ttft_p95" for "ttft_p95_ms") also counts.
func Closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := Distance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := max(1, min(3, len(s)/3))
	if bestD < 0 || bestD > limit {
		for _, c := range candidates {
			if len(s) >= 4 && (strings.HasPrefix(c, s) || strings.HasSuffix(c, s)) {
				return c
			}
		}
		return ""
	}
	return best
}

// Hint returns ` (did you mean "x"?)` when a candidate is close to s, else "".
func Hint(s string, candidates []string) string {
	if c := Closest(s, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// Several returns up to n candidates close to s, nearest first: those within
// a third of its length in edits (at least 2), and those containing it. Case
// is ignored, as Closest ignores it: TTFT_p95_ms is one edit from nothing
// but ttft_p95_ms.
func Several(s string, candidates []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := Distance(ls, lc)
		if d <= max(2, len(s)/3) || (len(s) >= 4 && strings.Contains(lc, ls)) {
			cs = append(cs, cand{c, d})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// Distance is the optimal-string-alignment distance between a and b:
// Levenshtein plus adjacent transpositions, the commonest typo ("smi" for "sim").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	rows := make([][]int, len(ra)+1)
	for i := range rows {
		rows[i] = make([]int, len(rb)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(ra)][len(rb)]
}
