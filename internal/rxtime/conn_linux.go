//go:build linux

package rxtime

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oobWords sizes the control buffer: one SCM_TIMESTAMPING message (a 16-byte
// header and three timespecs) with room to spare, as 8-byte words so the
// messages' data is aligned for reading in place.
const oobWords = 16

// Conn is a TCP connection read with recvmsg, each read keeping the
// kernel's receive time of its last byte. Writes, deadlines and Close are
// the embedded connection's. Read it from one goroutine at a time (as
// net/http's transport does); Latest may be called from any.
type Conn struct {
	net.Conn
	rc     syscall.RawConn
	recvFn func(fd uintptr) bool // c.recv, bound once: no allocation per read

	// The message of the read in progress (only the reading goroutine
	// touches these).
	p     []byte
	msg   unix.Msghdr
	iov   unix.Iovec
	oob   [oobWords]uint64
	n     int
	errno syscall.Errno

	reads  atomic.Uint64
	kernel atomic.Int64
}

// Wrap turns on software receive timestamps on c and returns it read
// through recvmsg (a *Conn), or returns c unchanged when c is no TCP
// connection or the kernel refuses both SO_TIMESTAMPING and SO_TIMESTAMPNS.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = enable(int(fd)) }); err != nil || serr != nil {
		return c
	}
	keepOnce.Do(keepStamping)
	w := &Conn{Conn: c, rc: rc}
	w.recvFn = w.recv
	w.msg.Iov = &w.iov
	w.msg.SetIovlen(1)
	return w
}

// keepOnce sets up the keeper once.
var keepOnce sync.Once

// keeper is a socket that keeps receive timestamping wanted. It is only
// written: holding it is what keeps the socket (and the kernel's switch) open.
//
//lint:ignore U1000 held, never read: the reference keeps the socket open
var keeper *net.UDPConn

// keepStamping keeps the kernel's receive timestamping switched on for the
// life of the process, and waits (at most switchOnWait) until it is. The
// kernel stamps packets only while some socket wants it, and switching it on
// when none did is deferred to a work queue, so bytes that arrive before the
// switch go unstamped (user time). The keeper, a loopback UDP socket, sends
// itself datagrams until one comes back stamped; it stays open (one
// descriptor), so the switch happens once per process rather than each time
// the last stamped connection closes and a new one opens.
func keepStamping() {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return
	}
	rc, err := c.SyscallConn()
	var serr error
	if err != nil || rc.Control(func(fd uintptr) { serr = enable(int(fd)) }) != nil || serr != nil {
		c.Close()
		return
	}
	keeper = c
	buf, oob := make([]byte, 1), make([]byte, 128)
	for deadline := time.Now().Add(switchOnWait); time.Now().Before(deadline); {
		if _, err := c.WriteToUDP(buf, c.LocalAddr().(*net.UDPAddr)); err != nil {
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, oobn, _, _, err := c.ReadMsgUDP(buf, oob); err == nil && oobn > 0 {
			return // stamped: the switch is on
		}
	}
}

// switchOnWait bounds the first Wrap's wait for timestamping to switch on.
const switchOnWait = 200 * time.Millisecond

// enable asks for software receive timestamps: SO_TIMESTAMPING's
// (generated in software, reported), else SO_TIMESTAMPNS's, which some
// kernels' sandboxes offer alone.
func enable(fd int) error {
	const flags = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags); err == nil {
		return nil
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
}

// Read reads into p with recvmsg and keeps the kernel's time of the read.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.p = p
	err := c.rc.Read(c.recvFn)
	c.p, c.iov.Base = nil, nil // do not keep the caller's buffer alive
	if err != nil {
		if oe, ok := err.(*net.OpError); ok {
			oe.Op = "read" // RawConn says "raw-read"; the caller read
		}
		return 0, err
	}
	if c.errno != 0 {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", c.errno)}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	return c.n, nil
}

// recv is one recvmsg of c.p, run by RawConn.Read when the socket is
// readable; false asks it to wait for readiness and call again.
func (c *Conn) recv(fd uintptr) bool {
	c.iov.Base = &c.p[0]
	c.iov.SetLen(len(c.p))
	c.msg.Control = (*byte)(unsafe.Pointer(&c.oob[0]))
	c.msg.SetControllen(len(c.oob) * 8)
	for {
		n, _, errno := syscall.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		switch errno {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
			c.n, c.errno = int(n), 0
			raceRead(fd, c.p[:n])
			if n > 0 {
				c.kernel.Store(c.stamp())
				c.reads.Add(1)
			}
		default:
			c.n, c.errno = 0, errno
		}
		return true
	}
}

// stamp is the software receive time in the read's control messages (Unix
// ns), or 0 when there is none (truncated, or the kernel stamped nothing:
// bytes that arrived before timestamping was on).
func (c *Conn) stamp() int64 {
	if c.msg.Flags&unix.MSG_CTRUNC != 0 {
		return 0
	}
	oob := unsafe.Slice((*byte)(unsafe.Pointer(&c.oob[0])), len(c.oob)*8)[:c.msg.Controllen]
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return 0
		}
		data := oob[unix.CmsgLen(0):l]
		if h.Level == unix.SOL_SOCKET {
			switch h.Type {
			case unix.SCM_TIMESTAMPING, unix.SO_TIMESTAMPING_NEW, unix.SO_TIMESTAMPNS, unix.SO_TIMESTAMPNS_NEW:
				// The software time is the first timespec of either form
				// (SCM_TIMESTAMPING carries three: software, two unused).
				if ns := timespecNs(data, h.Type); ns != 0 {
					return ns
				}
			}
		}
		if next := unix.CmsgSpace(l - unix.CmsgLen(0)); next < len(oob) {
			oob = oob[next:]
		} else {
			break
		}
	}
	return 0
}

// timespecNs reads the first timespec of a timestamp message: 64-bit
// seconds and nanoseconds for the _NEW forms and on 64-bit machines, the
// C long's width for the old forms on 32-bit ones.
func timespecNs(data []byte, typ int32) int64 {
	var sec, nsec int64
	wide := typ == unix.SO_TIMESTAMPING_NEW || typ == unix.SO_TIMESTAMPNS_NEW || unsafe.Sizeof(uintptr(0)) == 8
	switch {
	case wide && len(data) >= 16:
		sec = *(*int64)(unsafe.Pointer(&data[0]))
		nsec = *(*int64)(unsafe.Pointer(&data[8]))
	case !wide && len(data) >= 8:
		sec = int64(*(*int32)(unsafe.Pointer(&data[0])))
		nsec = int64(*(*int32)(unsafe.Pointer(&data[4])))
	default:
		return 0
	}
	return sec*1e9 + nsec
}

// Latest implements Stamper.
func (c *Conn) Latest() (read uint64, unixNs int64) {
	return c.reads.Load(), c.kernel.Load()
}
