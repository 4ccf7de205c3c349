//go:build !linux

package stream

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// congestionControl: only Linux sets a socket's congestion control here.
func congestionControl(name string) func(network, address string, rc syscall.RawConn) error {
	if name == "" {
		return nil
	}
	return func(string, string, syscall.RawConn) error {
		return fmt.Errorf("stream: TCP congestion control %q: only supported on Linux", name)
	}
}

func socketCongestion(*net.TCPConn) (string, error) {
	return "", errors.New("stream: TCP congestion control: only supported on Linux")
}
