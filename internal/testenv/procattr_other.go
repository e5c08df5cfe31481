//go:build !linux

package testenv

import "syscall"

// serverProcAttr puts a test server in its own process group (no
// Pdeathsig here: Stop and Cleanup kill it).
func serverProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
