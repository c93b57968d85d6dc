package scenario

import (
	"github.com/runnerbench/runner/internal/suggest"

	"cmp"
	"errors"
	"fmt"
	"slices"
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
	sets []Set // the overrides applied, whose problems are named by their flag
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
	for _, e := range p.list {
		if i := (e.Line - setLineBase) / setLineStride; e.File == p.file && e.Line >= setLineBase && i < len(p.sets) {
			// A problem in an override's value is the flag's, not the file's.
			e.File, e.Line, e.Column = p.sets[i].name(), 0, 0
		}
	}
	errs := make([]error, len(p.list))
	for i, e := range p.list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// didYouMean returns ` (did you mean "x"?)` when one candidate is close to s.
func didYouMean(s string, candidates []string) string { return suggest.Hint(s, candidates) }
