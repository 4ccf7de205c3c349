//go:build linux

package stream

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// batchUDP is a *net.UDPConn with the two methods quic-go prefers to its own when a socket
// has them: ReadBatch (its batchConn), one recvmmsg per call into the caller's buffers with
// headers reused between calls, and WriteMsgUDP without a sockaddr allocated per packet.
//
// ReadBatch keeps state between calls and must have one caller at a time (quic.Transport
// reads on one goroutine); writes may run concurrently with it. The *net.UDPAddr values it
// returns are shared between packets from the same address and must not be modified.
type batchUDP struct {
	*net.UDPConn
	rc syscall.RawConn

	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	addrs map[sockKey]*net.UDPAddr

	// One call's recvmmsg arguments and results, for read, which is made once so that
	// passing it to rc.Read allocates nothing.
	vlen, flags int
	n           int
	errno       syscall.Errno
	read        func(fd uintptr) bool
}

// maxCachedAddrs bounds batchUDP's address cache; when full it is emptied (a listener
// talking to more peers than this allocates as quic-go would without the cache).
const maxCachedAddrs = 1024

var _ interface {
	ReadBatch([]ipv4.Message, int) (int, error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
} = (*batchUDP)(nil)

func newBatchUDP(c *net.UDPConn) (net.PacketConn, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, false
	}
	b := &batchUDP{UDPConn: c, rc: rc, addrs: make(map[sockKey]*net.UDPAddr)}
	b.read = b.recvmmsg
	return b, true
}

// sockKey is a received source address, comparable and built without allocating.
type sockKey struct {
	ip    [16]byte
	port  uint16
	v6    bool
	scope uint32
}

// ReadBatch receives up to len(ms) datagrams with one recvmmsg, each into ms[i].Buffers and
// its control messages into ms[i].OOB, and sets N, NN, Flags and Addr of the first n. It
// blocks (through the runtime's poller, honouring read deadlines) until at least one
// datagram is there. Errors are *net.OpError, as x/net's ReadBatch returns.
func (c *batchUDP) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	c.prepare(ms)
	c.vlen, c.flags, c.n, c.errno = len(ms), flags, 0, 0
	err := c.rc.Read(c.read)
	if err == nil && c.errno != 0 {
		err = os.NewSyscallError("recvmmsg", c.errno)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Err: err}
	}
	for i := range c.n {
		h := &c.hdrs[i]
		ms[i].N = int(h.Len)
		ms[i].NN = int(h.Hdr.Controllen)
		ms[i].Flags = int(h.Hdr.Flags)
		ms[i].Addr = c.addr(&c.names[i])
	}
	return c.n, nil
}

// prepare points one mmsghdr per message at its buffers, its OOB and a name slot.
func (c *batchUDP) prepare(ms []ipv4.Message) {
	niov := 0
	for i := range ms {
		niov += len(ms[i].Buffers)
	}
	if cap(c.hdrs) < len(ms) {
		c.hdrs = make([]unix.Mmsghdr, len(ms))
		c.names = make([]unix.RawSockaddrInet6, len(ms))
	}
	if cap(c.iovs) < niov {
		c.iovs = make([]unix.Iovec, niov)
	}
	c.hdrs, c.names, c.iovs = c.hdrs[:len(ms)], c.names[:len(ms)], c.iovs[:niov]
	iov := 0
	for i := range ms {
		h := &c.hdrs[i]
		*h = unix.Mmsghdr{}
		h.Hdr.Name = (*byte)(unsafe.Pointer(&c.names[i]))
		h.Hdr.Namelen = unix.SizeofSockaddrInet6
		if nb := len(ms[i].Buffers); nb > 0 {
			h.Hdr.Iov = &c.iovs[iov]
			h.Hdr.SetIovlen(nb)
			for _, b := range ms[i].Buffers {
				v := &c.iovs[iov]
				*v = unix.Iovec{}
				if len(b) > 0 {
					v.Base = &b[0]
					v.SetLen(len(b))
				}
				iov++
			}
		}
		if len(ms[i].OOB) > 0 {
			h.Hdr.Control = &ms[i].OOB[0]
			h.Hdr.SetControllen(len(ms[i].OOB))
		}
	}
}

// recvmmsg is the raw read: false (wait for the socket to be readable) on EAGAIN.
func (c *batchUDP) recvmmsg(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&c.hdrs[0])), uintptr(c.vlen), uintptr(c.flags), 0, 0)
		switch e {
		case 0:
			c.n = int(n)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			c.errno = e
			return true
		}
	}
}

// addr is the source address in sa, the same *net.UDPAddr each time for the same address.
func (c *batchUDP) addr(sa *unix.RawSockaddrInet6) net.Addr {
	var k sockKey
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		copy(k.ip[:], sa4.Addr[:])
		k.port = portOf(&sa4.Port)
	case unix.AF_INET6:
		k.ip, k.port, k.v6, k.scope = sa.Addr, portOf(&sa.Port), true, sa.Scope_id
	default:
		return &net.UDPAddr{}
	}
	if a, ok := c.addrs[k]; ok {
		return a
	}
	a := &net.UDPAddr{Port: int(k.port)}
	if k.v6 {
		a.IP = net.IP(append([]byte(nil), k.ip[:]...))
		if k.scope != 0 {
			if ifi, err := net.InterfaceByIndex(int(k.scope)); err == nil {
				a.Zone = ifi.Name
			} else {
				a.Zone = strconv.FormatUint(uint64(k.scope), 10)
			}
		}
	} else {
		a.IP = net.IP(append([]byte(nil), k.ip[:4]...))
	}
	if len(c.addrs) >= maxCachedAddrs {
		clear(c.addrs)
	}
	c.addrs[k] = a
	return a
}

// portOf reads a sockaddr's port, stored in network byte order.
func portOf(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// WriteMsgUDP sends through WriteMsgUDPAddrPort, which builds the sockaddr without
// allocating; an address with a zone (or none) takes the *net.UDPAddr path.
func (c *batchUDP) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if addr == nil || addr.Zone != "" {
		return c.UDPConn.WriteMsgUDP(b, oob, addr)
	}
	ap := addr.AddrPort()
	if !ap.Addr().IsValid() {
		return c.UDPConn.WriteMsgUDP(b, oob, addr)
	}
	return c.UDPConn.WriteMsgUDPAddrPort(b, oob, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
}
