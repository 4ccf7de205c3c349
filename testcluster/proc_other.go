//go:build !linux

package testcluster

import "syscall"

// procAttr: without Pdeathsig, node processes outlive a crashed parent; Close still stops them.
func procAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return nil
}
