//go:build !linux

package runner

import "time"

// fineSleep is Linux's nanosleep; elsewhere the busy loop covers the last
// timerMargin instead.
func fineSleep(time.Time) {}
