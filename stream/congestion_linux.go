package stream

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// congestionControl returns a socket Control function that sets TCP congestion control
// name (setsockopt TCP_CONGESTION) before a socket listens or connects, or nil for the
// kernel's default. An algorithm the kernel does not offer fails there, naming those it does.
func congestionControl(name string) func(network, address string, rc syscall.RawConn) error {
	if name == "" {
		return nil
	}
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
		}); err != nil {
			return err
		}
		if serr != nil {
			avail := "unknown"
			if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control"); err == nil {
				avail = strings.TrimSpace(string(b))
			}
			return fmt.Errorf("stream: TCP congestion control %q: %w (this kernel offers: %s)", name, serr, avail)
		}
		return nil
	}
}

// socketCongestion reads the congestion control of c's socket.
func socketCongestion(c *net.TCPConn) (string, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return strings.TrimRight(name, "\x00"), gerr
}
