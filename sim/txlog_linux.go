//go:build linux

package sim

import (
	"net"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// txLog reads the kernel's transmit times of a connection's writes: its
// software transmit timestamps (SO_TIMESTAMPING with OPT_ID), one per write,
// keyed by the offset of the write's last byte in the connection's stream.
// On loopback a write's bytes reach the client's kernel when they are
// transmitted, which is during the write call unless TCP holds them (a
// congestion window waiting on a late reader's delayed acknowledgements);
// the transmit time is right either way.
type txLog struct {
	rc    syscall.RawConn
	mu    sync.Mutex
	sent  uint32           // bytes written, mod 2^32
	since int              // writes since the error queue was last read
	at    map[uint32]int64 // transmit time (Unix ns) by key, as reported
	buf   [64]byte
	oob   [32]uint64
}

// txKeep bounds the transmit times a connection keeps (the newest win).
const txKeep = 1 << 14

// newTxLog turns on transmit timestamps for c, or returns nil (another
// kind of connection, or the kernel refused).
func newTxLog(c net.Conn) *txLog {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	const flags = unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_ID_TCP | unix.SOF_TIMESTAMPING_OPT_TSONLY
	var serr error
	if rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags) }) != nil || serr != nil {
		return nil
	}
	return &txLog{rc: rc, at: map[uint32]int64{}}
}

// wrote counts n bytes written and returns the key of the last of them
// (false when n is 0).
func (l *txLog) wrote(n int) (key uint32, ok bool) {
	if n <= 0 {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent += uint32(n)
	if l.since++; l.since >= txDrainEvery {
		_ = l.rc.Control(func(fd uintptr) { l.drain(int(fd)) })
	}
	return l.sent - 1, true
}

// txDrainEvery is how many writes may queue their reports before wrote
// reads them. The kernel charges the error queue to the socket's receive
// buffer: left unread over a kept-alive connection's hundreds of writes, it
// fills that buffer, the window closes, and the client's next request
// stalls unread.
const txDrainEvery = 32

// flush reads every report the kernel has queued (before the connection
// closes, which drops them).
func (l *txLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.rc.Control(func(fd uintptr) { l.drain(int(fd)) })
}

// sentAt is the transmit time (Unix ns) of the write whose last byte has
// key, reading every report the kernel has queued first; ok is false when
// none has come (yet).
func (l *txLog) sentAt(key uint32) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.rc.Control(func(fd uintptr) { l.drain(int(fd)) })
	if ns, ok := l.at[key]; ok {
		return ns, true
	}
	// Several writes held by TCP leave in one packet, reported once under
	// the last one's key: the earlier ones' bytes left then too. Take the
	// nearest key after this one (within 1 MiB, so a wrapped counter or
	// another response long after does not answer).
	var best int64
	bestD := uint32(1 << 20)
	for k, ns := range l.at {
		if d := k - key; d < bestD {
			best, bestD = ns, d
		}
	}
	return best, bestD < 1<<20
}

// drain reads the error queue until it is empty (under l.mu).
func (l *txLog) drain(fd int) {
	l.since = 0
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, l.buf[:], unsafe.Slice((*byte)(unsafe.Pointer(&l.oob[0])), len(l.oob)*8), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err != nil || (n == 0 && oobn == 0) {
			return
		}
		if key, ns, ok := l.report(oobn); ok {
			if len(l.at) >= txKeep {
				clear(l.at)
			}
			l.at[key] = ns
		}
	}
}

// report parses one error-queue message: a software transmit timestamp and
// the extended error whose data is its key.
func (l *txLog) report(oobn int) (key uint32, ns int64, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(unsafe.Slice((*byte)(unsafe.Pointer(&l.oob[0])), len(l.oob)*8)[:oobn])
	if err != nil {
		return 0, 0, false
	}
	var haveKey, haveTime bool
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPING && len(m.Data) >= 16:
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			ns, haveTime = ts.Nano(), ts.Sec != 0 || ts.Nsec != 0
		case (m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR) || (m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR):
			if len(m.Data) < int(unsafe.Sizeof(unix.SockExtendedErr{})) {
				continue
			}
			ee := (*unix.SockExtendedErr)(unsafe.Pointer(&m.Data[0]))
			if ee.Origin == unix.SO_EE_ORIGIN_TIMESTAMPING && ee.Info == unix.SCM_TSTAMP_SND {
				key, haveKey = ee.Data, true
			}
		}
	}
	return key, ns, haveKey && haveTime
}

// retransmits is how many segments the connection's kernel has
// retransmitted so far (TCP_INFO's total).
func (l *txLog) retransmits() uint32 {
	var n uint32
	_ = l.rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = info.Total_retrans
		}
	})
	return n
}
