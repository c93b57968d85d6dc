//go:build !linux

package sim

import "net"

// txLog is Linux's only: elsewhere writes carry no transmit time.
type txLog struct{}

func newTxLog(net.Conn) *txLog { return nil }

func (*txLog) wrote(int) (uint32, bool)    { return 0, false }
func (*txLog) sentAt(uint32) (int64, bool) { return 0, false }
func (*txLog) flush()                      {}

func (*txLog) retransmits() uint32 { return 0 }
