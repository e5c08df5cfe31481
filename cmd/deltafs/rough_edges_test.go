package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Every usage error (missing arguments, a bad flag) exits 2, whatever
// the command.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"ls"}, {"history"}, {"append", "/t"}, {"mount"}, {"unmount"}, {"demo", "x"},
		{"ls", "--no-such-flag"}, {"history", "--no-such-flag"}, {"mount", "--no-such-flag"}, {"unmount", "--no-such-flag", "/x"},
	} {
		if _, errOut, code := deltafs(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
	}
}

// A command that fails prints nothing on stdout (no column header
// before the error).
func TestFailedLsHistoryPrintNothing(t *testing.T) {
	fx := testenv.Fixtures(t)
	for _, args := range [][]string{
		{"history", "/nonexistent/table"},
		{"ls", "/nonexistent/table"},
		{"history", filepath.Join(fx, "delta-kernel-rs/golden-no-delta-log-folder/table")},
	} {
		out, errOut, code := deltafs(t, args...)
		if code == 0 || out != "" {
			t.Errorf("%v: exit %d, stdout %q (stderr %q); want a failure with nothing on stdout", args, code, out, errOut)
		}
	}
}

// unmount of a path that does not exist says so.
func TestUnmountMissingPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	_, errOut, code := deltafs(t, "unmount", missing)
	if code == 0 || !strings.Contains(errOut, "does not exist") || strings.Contains(errOut, "not mounted") {
		t.Errorf("unmount %s: exit %d, stderr %q; want 'does not exist'", missing, code, errOut)
	}
}

// ls and history of a path inside a deltafs mount say to use the
// table's source.
func TestLsInsideMountSaysUseSource(t *testing.T) {
	testenv.RequireFUSE(t)
	mnt := mountTable(t, testenv.Fixture(t, "dat/basic_append"))
	for _, args := range [][]string{{"ls", filepath.Join(mnt, "t", "@v1")}, {"ls", filepath.Join(mnt, "t")}, {"history", filepath.Join(mnt, "t")}} {
		out, errOut, code := deltafs(t, args...)
		if code == 0 || out != "" || !strings.Contains(errOut, "a path inside a deltafs mount") || !strings.Contains(errOut, "use the table's source") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 'a path inside a deltafs mount: use the table's source'", args, code, out, errOut)
		}
	}
}

// SIGINT of a mount with an open file says, in one line, that it
// detached lazily, and the process exits once the file is closed.
func TestInterruptBusyMountOneLine(t *testing.T) {
	testenv.RequireFUSE(t)
	mnt := t.TempDir()
	cmd := exec.Command(binary, "mount", "--read-only", "--cache-dir", t.TempDir(), "t="+testenv.Fixture(t, "dat/basic_append"), mnt)
	var stderr syncWriter
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		exec.Command("fusermount3", "-uz", mnt).Run()
	})
	for i := 0; mountedAt(t, mnt) == ""; i++ {
		if i == 500 {
			t.Fatal("mount did not appear")
		}
		time.Sleep(20 * time.Millisecond)
	}
	f, err := os.Open(filepath.Join(mnt, "t", "_history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(os.Interrupt)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "busy") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	f.Close()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the mount did not exit once the file was closed")
	}
	var busy []string
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "deltafs: mounted") && !strings.HasPrefix(sc.Text(), "deltafs: unmounted") {
			busy = append(busy, sc.Text())
		}
	}
	if len(busy) != 1 || !strings.Contains(busy[0], "busy; detached lazily, exiting when files close") {
		t.Errorf("stderr after SIGINT with an open file:\n%s\nwant one line 'busy; detached lazily, exiting when files close'", stderr.String())
	}
}

// syncWriter is a buffer written by a child process's output copier.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// The mount's first line says which tables were refused, once.
func TestMountedLineSaysRefused(t *testing.T) {
	if got := mountedLine("/m", 2, nil); got != "deltafs: mounted 2 tables at /m" {
		t.Errorf("no refusal: %q", got)
	}
	got := mountedLine("/m", 2, map[string]error{"bad": errors.New("unsupported feature")})
	if !strings.Contains(got, "mounted 1 of 2 tables at /m") || !strings.Contains(got, "refused: bad") || !strings.Contains(got, "/m/bad/_deltafs_error.txt") {
		t.Errorf("one refused: %q", got)
	}
}

// history's columns stay aligned with Delta's long operation names.
func TestHistoryColumnsAlign(t *testing.T) {
	var b bytes.Buffer
	ts := time.Date(2026, 5, 1, 14, 30, 0, 0, time.UTC)
	err := printHistory(&b, func(emit func(delta.CommitSummary) error) error {
		for i, op := range []string{"WRITE", "CREATE OR REPLACE TABLE AS SELECT", "ADD DELETION VECTORS TOMBSTONES"} {
			if err := emit(delta.CommitSummary{Version: int64(i), Timestamp: ts, Operation: op, EngineInfo: "Apache-Spark/3.5.0"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	col := strings.Index(lines[0], "ENGINE")
	for _, l := range lines[1:] {
		if strings.Index(l, "Apache-Spark") != col {
			t.Errorf("engine column at %d, header at %d:\n%s", strings.Index(l, "Apache-Spark"), col, b.String())
		}
	}
}
