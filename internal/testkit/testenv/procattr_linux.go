package testenv

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// serverProcAttr puts a test server in its own process group, killed
// when the test process dies.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Nobody is the uid and gid of Debian's "nobody" (and nogroup).
const Nobody = 65534

// AsUser makes cmd run as uid and gid, with no supplementary groups. It
// skips the test (Skip) when this process cannot switch users (not root).
func AsUser(t testing.TB, cmd *exec.Cmd, uid, gid uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "running a process as uid %d needs root", uid)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
}
