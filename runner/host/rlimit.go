package host

import (
	"errors"
	"fmt"
	"syscall"
)

// fileMargin is the descriptors kept beyond one per stream: the listener of
// an in-process simulator, log and report files, the Go runtime's own (epoll,
// pipes), DNS and metrics connections, and connections still closing while
// their replacements open.
const fileMargin = 256

// RaiseFileLimit makes sure the process may open enough files for a level
// of need concurrent streams (one socket each, plus a margin). It raises the
// soft RLIMIT_NOFILE to min(hard, need+margin) when the soft limit is lower,
// and returns an error naming both numbers when even the hard limit is too
// low, so a 10,000-stream level fails before it starts rather than with
// "too many open files" in the middle of its measured window. Lowering is
// never done.
func RaiseFileLimit(need int) error {
	if need <= 0 {
		return nil
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-file limit: %w", err)
	}
	return raiseFileLimit(need, &lim, func(l *syscall.Rlimit) error {
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, l)
	})
}

// ErrFileLimit is wrapped by RaiseFileLimit's error when the hard limit is
// below what a level needs.
var ErrFileLimit = errors.New("open-file limit too low")

// raiseFileLimit is RaiseFileLimit over a given limit and setter, for tests.
func raiseFileLimit(need int, lim *syscall.Rlimit, set func(*syscall.Rlimit) error) error {
	want := uint64(need) + fileMargin
	if lim.Cur >= want {
		return nil
	}
	target := min(want, lim.Max)
	if target > lim.Cur {
		nl := syscall.Rlimit{Cur: target, Max: lim.Max}
		if err := set(&nl); err != nil {
			return fmt.Errorf("raising the open-file limit from %d to %d: %w", lim.Cur, target, err)
		}
		lim.Cur = target
	}
	if lim.Cur < uint64(need)+fileMargin/4 {
		// Below the need plus a small margin even at the hard limit: the level
		// would run out of sockets part-way. A root user can raise the hard
		// limit (ulimit -Hn, LimitNOFILE= in a systemd unit, nofile in
		// /etc/security/limits.conf).
		return fmt.Errorf("%w: a level of concurrency %d needs about %d open files and the hard limit is %d (raise it with ulimit -n or the service's nofile limit)",
			ErrFileLimit, need, want, lim.Max)
	}
	return nil
}
