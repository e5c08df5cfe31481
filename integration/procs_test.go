package integration

// The deltafs binary as a process: built once per test run (TestMain
// removes it), `deltafs mount` started on a table and killed or stopped,
// `deltafs append` run to completion or killed. The crash, race and inbox
// benchmark tests use them: a kill -9 has to hit another process.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// binDir holds the deltafs binary built for this test run: made on first
// use (a child process running this test binary, killed by its test,
// never makes one to leave behind) and removed by TestMain.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// deltafsBin builds cmd/deltafs once per test run (on first use), with
// the crash-point hook compiled in (build tag deltafs_crashpoints: inert
// unless DELTAFS_CRASHPOINT is set), and returns the binary's path.
func deltafsBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deltafs-integration-bin-")
		if err != nil {
			buildErr = fmt.Errorf("temp dir for the binary: %w", err)
			return
		}
		binDir = dir
		bin := filepath.Join(binDir, "deltafs")
		cmd := exec.Command("go", "build", "-tags", "deltafs_crashpoints", "-o", bin, "github.com/deltafs/deltafs/cmd/deltafs")
		cmd.Dir = testenv.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "deltafs")
}

// procMount is a `deltafs mount` process serving one mountpoint.
type procMount struct {
	cmd  *exec.Cmd
	mnt  string
	log  *syncBuffer
	done chan struct{} // closed once the process is reaped
}

// mountOpts configures startMount.
type mountOpts struct {
	cacheDir string   // --cache-dir
	env      []string // extra environment (KEY=VALUE)
	sources  []string // NAME=URL
}

// startMount starts `deltafs mount` and waits until it says it is ready.
// The process is killed and its mount detached when the test ends.
func startMount(t testing.TB, o mountOpts) *procMount {
	t.Helper()
	testenv.RequireFUSE(t)
	m := &procMount{mnt: t.TempDir(), log: &syncBuffer{}, done: make(chan struct{})}
	args := append([]string{"mount", "--cache-dir", o.cacheDir}, o.sources...)
	m.cmd = exec.Command(deltafsBin(t), append(args, m.mnt)...)
	m.cmd.Env = append(os.Environ(), o.env...)
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.kill(); m.wait(10 * time.Second); detachMount(m.mnt) })
	ready := make(chan bool, 1)
	go m.follow(stderr, ready)
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("deltafs mount exited before it was ready:\n%s", m.log.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("deltafs mount not ready after 60s:\n%s", m.log.String())
	}
	return m
}

// follow copies the process's stderr into the log, reports the ready line
// (or false at EOF without it), then reaps the process.
func (m *procMount) follow(stderr io.Reader, ready chan<- bool) {
	sc := bufio.NewScanner(stderr)
	said := false
	for sc.Scan() {
		m.log.WriteString(sc.Text() + "\n")
		if !said && strings.Contains(sc.Text(), "deltafs: mounted ") {
			said = true
			ready <- true
		}
	}
	if !said {
		ready <- false
	}
	m.cmd.Wait()
	close(m.done)
}

// kill sends SIGKILL (a no-op once the process is gone).
func (m *procMount) kill() { m.cmd.Process.Signal(syscall.SIGKILL) }

// wait waits up to d for the process to end; it reports whether it did.
func (m *procMount) wait(d time.Duration) bool {
	select {
	case <-m.done:
		return true
	case <-time.After(d):
		return false
	}
}

// killedBySIGKILL reports whether the reaped process died of SIGKILL.
func (m *procMount) killedBySIGKILL() bool {
	st, ok := m.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && st.Signaled() && st.Signal() == syscall.SIGKILL
}

// detachMount lazily unmounts dir (umount2 MNT_DETACH as root, else
// fusermount3 -u -z), ignoring "not mounted": a killed FUSE server
// leaves a dead mount ("transport endpoint is not connected").
func detachMount(dir string) {
	if os.Geteuid() == 0 {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		return
	}
	exec.Command("fusermount3", "-u", "-z", dir).Run()
}

// appendRun is the outcome of one `deltafs append` process.
type appendRun struct {
	version int64 // printed on success, else -1
	killed  bool  // died of SIGKILL
	err     error
	output  string
}

// runAppend runs `deltafs append root files...` with extra environment;
// killAfter > 0 sends it SIGKILL after that long if it is still running.
func runAppend(t testing.TB, env []string, killAfter time.Duration, root string, files ...string) appendRun {
	t.Helper()
	cmd := exec.Command(deltafsBin(t), append([]string{"append", root}, files...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	r := appendRun{version: -1, err: err, output: stdout.String() + stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		st, _ := ee.Sys().(syscall.WaitStatus)
		r.killed = st.Signaled() && st.Signal() == syscall.SIGKILL
	}
	if err == nil {
		if _, serr := fmt.Sscan(stdout.String(), &r.version); serr != nil {
			r.err = fmt.Errorf("append printed %q: %w", stdout.String(), serr)
		}
	}
	return r
}

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer (log handlers write through it).
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
