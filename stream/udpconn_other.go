//go:build !linux

package stream

import "net"

// newBatchUDP has no allocation-free batch read to offer here: quic-go reads c itself.
func newBatchUDP(*net.UDPConn) (net.PacketConn, bool) { return nil, false }
