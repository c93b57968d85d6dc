//go:build !linux

package clock

import "time"

// Alarm is Linux's timerfd (alarm_linux.go). Elsewhere the runtime's poller
// sleeps with a finer timeout (kqueue takes a timespec), and a timer alone
// wakes close enough to the spin's start.
type Alarm struct{}

func NewAlarm() *Alarm         { return nil }
func (a *Alarm) Set(time.Time) {}
func (a *Alarm) Close()        {}
