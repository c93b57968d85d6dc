//go:build race

package rxtime

import (
	"runtime"
	"syscall"
	"unsafe"
)

// raceRead tells the race detector what syscall.Read tells it after a
// read: p was written, and the read comes after every write to a file
// descriptor in this process (syscall's I/O synchronisation). recvmsg
// through syscall.Syscall says neither, so without it a test's server
// handler and the client reading its answer would race. A read of zero
// bytes is syscall.Read's way in: it returns at once on a socket.
func raceRead(fd uintptr, p []byte) {
	if len(p) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(&p[0]), len(p))
	}
	_, _ = syscall.Read(int(fd), nil)
}
