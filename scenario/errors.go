package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in a plan, positioned in its file. It formats as
// "file:line:col: message", the form editors and CI logs link to.
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
}

// Error implements error.
func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	default:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
}

// Errors returns the positioned problems an error from Load holds, in order.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		walk(errors.Unwrap(err))
	}
	walk(err)
	return out
}

// pos is a place in the plan file.
type pos struct{ line, col int }

// problems collects every error found while loading, so a plan with five
// mistakes is fixed in one round trip rather than five.
type problems struct {
	file string
	list []*Error
}

func (p *problems) add(at pos, format string, args ...any) {
	p.list = append(p.list, &Error{File: p.file, Line: at.line, Column: at.col, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems sorted by position and joined, or nil. Duplicates
// (the same message at the same place, reached by two routes) are dropped.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	// The plan's own problems come first, then those inside prompt files.
	slices.SortStableFunc(p.list, func(a, b *Error) int {
		if (a.File == p.file) != (b.File == p.file) {
			if a.File == p.file {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	p.list = slices.CompactFunc(p.list, func(a, b *Error) bool { return *a == *b })
	errs := make([]error, len(p.list))
	for i, e := range p.list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// didYouMean returns ` (did you mean "x"?)` when one candidate is close to s.
func didYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// closest returns the candidate nearest to s by edit distance when it is near
// enough to be a likely typo, else "".
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := max(1, min(3, len(s)/3))
	if bestD < 0 || bestD > limit {
		// A prefix or suffix match ("ttft_p95" for "ttft_p95_ms") is still a likely intent.
		for _, c := range candidates {
			if len(s) >= 4 && (strings.HasPrefix(c, s) || strings.HasSuffix(c, s)) {
				return c
			}
		}
		return ""
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b:
// Levenshtein plus adjacent transpositions, the commonest typo ("smi" for "sim").
func editDistance(a, b string) int {
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
