//go:build !linux

package runner

import "time"

// alarm is Linux's timerfd (alarm_linux.go). Elsewhere the runtime's poller
// sleeps with a finer timeout (kqueue takes a timespec), and a timer alone
// wakes close enough to the spin's start.
type alarm struct{}

func newAlarm() *alarm         { return nil }
func (a *alarm) set(time.Time) {}
func (a *alarm) close()        {}
