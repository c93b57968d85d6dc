package clock

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Alarm wakes the Go runtime at an instant: a timerfd (CLOCK_MONOTONIC, no
// timer slack) that a goroutine keeps reading, so it sits in the runtime's
// poller. When the runtime is idle, a thread sleeps in epoll_wait with a
// timeout of whole milliseconds, and a timer due in between would fire late;
// the timerfd's event wakes that thread when it expires, and the thread runs
// the timers that are due. A nil alarm (no timerfd) does nothing.
type Alarm struct {
	fd int
	f  *os.File
}

func NewAlarm() *Alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil // the busy loop still ends on time, from a later start
	}
	a := &Alarm{fd: fd, f: os.NewFile(uintptr(fd), "runner-alarm")}
	go func() {
		var buf [8]byte
		for {
			// Each read parks in the poller until the next expiry; the
			// read's only purpose is to be there. Close ends it.
			if _, err := a.f.Read(buf[:]); err != nil {
				return
			}
		}
	}()
	return a
}

// Set arms the alarm for t (replacing any earlier setting).
func (a *Alarm) Set(t time.Time) {
	if a == nil {
		return
	}
	if d := time.Until(t); d > 0 {
		its := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		_ = unix.TimerfdSettime(a.fd, 0, &its, nil)
	}
}

func (a *Alarm) Close() {
	if a != nil {
		_ = a.f.Close()
	}
}
