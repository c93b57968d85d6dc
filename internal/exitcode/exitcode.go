// Package exitcode defines the process exit codes of runner and attaches them
// to errors, so that the CLI turns an error into an exit status in one place.
package exitcode

import (
	"errors"
	"fmt"
)

// Code is a process exit status.
type Code int

// The exit codes of the design contract (docs/design.md).
const (
	OK           Code = 0   // every check passed
	ChecksFailed Code = 1   // one or more checks failed
	Invalid      Code = 2   // the plan or the command line is invalid
	RunFailed    Code = 3   // the run could not be carried out
	Interrupted  Code = 130 // interrupted; reports still written
	Panic        Code = 4   // a bug: a recovered panic
)

type codedError struct {
	err  error
	code Code
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// With attaches code to err (nil stays nil). An existing code deeper in the chain
// is overridden by this one, since the outermost caller knows best.
func With(err error, code Code) error {
	if err == nil {
		return nil
	}
	return &codedError{err: err, code: code}
}

// Errorf formats an error carrying code.
func Errorf(code Code, format string, args ...any) error {
	return &codedError{err: fmt.Errorf(format, args...), code: code}
}

// Of returns the exit code an error carries: OK for nil, RunFailed for an error
// without a code.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	return RunFailed
}
