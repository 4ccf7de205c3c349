package testcluster

import "syscall"

// procAttr kills a node process with its parent unless it is detached, in which case it gets
// a process group of its own so that the terminal's signals do not reach it.
func procAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
