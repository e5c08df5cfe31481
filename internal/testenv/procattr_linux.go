package testenv

import "syscall"

// serverProcAttr puts a test server in its own process group, killed
// when the test process dies.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
