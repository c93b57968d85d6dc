package runner

import (
	"syscall"
	"time"
)

// fineSleep sleeps until t with nanosleep(2), which the kernel's
// high-resolution timers wake within the thread's timer slack. The goroutine
// keeps its thread while it sleeps (a system call: the runtime hands the
// thread's P to other goroutines if it lasts). A signal (the runtime's
// preemption uses SIGURG) cuts the sleep short: sleep the rest.
func fineSleep(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(int64(d))
		if err := syscall.Nanosleep(&ts, nil); err != syscall.EINTR {
			return
		}
	}
}
