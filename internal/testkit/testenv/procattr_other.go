//go:build !linux

package testenv

import (
	"os/exec"
	"syscall"
	"testing"
)

// serverProcAttr puts a test server in its own process group (no
// Pdeathsig here: Stop and Cleanup kill it).
func serverProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Nobody is the uid and gid of "nobody" on Linux.
const Nobody = 65534

// AsUser skips the test: switching users is tested on Linux only.
func AsUser(t testing.TB, cmd *exec.Cmd, uid, gid uint32) {
	t.Helper()
	Skip(t, "running a process as another user is tested on Linux only")
}
