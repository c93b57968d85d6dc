//go:build !linux

package rxtime

import "net"

// Wrap returns c unchanged: kernel receive times are read on Linux only.
func Wrap(c net.Conn) net.Conn { return c }
