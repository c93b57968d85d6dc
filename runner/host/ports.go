package host

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// portRangeFile is where Linux keeps the ephemeral port range.
const portRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// ErrPorts is wrapped by CheckPorts' error when a level needs more
// connections to one server than one source address has ports for.
var ErrPorts = errors.New("not enough ephemeral ports")

// CheckPorts refuses a level that would open conns connections to one server
// address (host:port) at once when that is more than the ephemeral ports a
// source address has (Linux: net.ipv4.ip_local_port_range, 28,232 by
// default): every connection to one server needs its own local port, and
// the connections past the range would fail with "cannot assign requested
// address" in the middle of the measured window. Where the range cannot be
// read (another OS), nothing is checked.
func CheckPorts(conns int, server string) error {
	b, err := os.ReadFile(portRangeFile)
	if err != nil {
		return nil
	}
	return checkPorts(conns, server, string(b))
}

// checkPorts is CheckPorts over the range file's text.
func checkPorts(conns int, server, portRange string) error {
	f := strings.Fields(portRange)
	if len(f) != 2 {
		return nil
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return nil
	}
	if ports := hi - lo + 1; conns > ports {
		return fmt.Errorf("%w: a level of concurrency %d opens %d connections to %s at once, and one source address has %d ephemeral ports for one server (net.ipv4.ip_local_port_range is %d %d): widen the range (sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\" gives 64,512), or split the load over machines (--shards)",
			ErrPorts, conns, conns, server, ports, lo, hi)
	}
	return nil
}
