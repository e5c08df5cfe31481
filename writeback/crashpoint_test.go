//go:build deltafs_crashpoints

package writeback

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func TestParseCrashPoint(t *testing.T) {
	cases := []struct {
		in   string
		name string
		nth  int64
	}{
		{"", "", 1},
		{"uploaded", "uploaded", 1},
		{"committed@3", "committed", 3},
		{"committed@0", "", 0},
		{"committed@x", "", 0},
	}
	for _, c := range cases {
		got := parseCrashPoint(c.in)
		if got.name != c.name || (c.name != "" && got.nth != c.nth) {
			t.Errorf("parseCrashPoint(%q) = %q@%d, want %q@%d", c.in, got.name, got.nth, c.name, c.nth)
		}
		if c.name == "" && got.armed("") {
			t.Errorf("parseCrashPoint(%q) armed the empty point", c.in)
		}
	}
}

// TestCrashReaderInert: unarmed, the hooks hand back what they wrap.
func TestCrashReaderInert(t *testing.T) {
	r := bytes.NewReader([]byte("data"))
	if crashReader(r, 4) != io.Reader(r) {
		t.Error("crashReader wrapped the body with no crash point armed")
	}
}

// crashHelperEnv marks the child process of TestCrashPointKills.
const crashHelperEnv = "DELTAFS_CRASHPOINT_HELPER_DIR"

// TestCrashPointKills runs an Append in a child process with each crash
// point armed and checks the child died of SIGKILL with the table in the
// state the point promises (commit present only after "committed").
func TestCrashPointKills(t *testing.T) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		crashHelper(t, dir)
		return
	}
	cases := []struct {
		point      string
		wantCommit bool
	}{
		{CrashStaged, false}, {CrashUploading, false}, {CrashUploaded, false},
		{CrashCommitting, false}, {CrashCommitted, true},
	}
	for _, c := range cases {
		t.Run(c.point, func(t *testing.T) {
			dir := testenv.CopyFixture(t, "dat/basic_append")
			v := latest(t, dir).Version()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashPointKills$")
			// The child dies by SIGKILL before its t.TempDir cleanup runs:
			// its temp dirs go under one of ours, removed with it.
			cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir, EnvCrashPoint+"="+c.point, "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want death by SIGKILL\n%s", err, out)
			}
			_, statErr := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000002.json"))
			if got := latest(t, dir).Version(); (got == v+1) != c.wantCommit || (statErr == nil) != c.wantCommit || v != 1 {
				t.Errorf("after a crash at %s: latest version %d (was %d), want a commit: %v", c.point, got, v, c.wantCommit)
			}
		})
	}
}

// crashHelper is the child of TestCrashPointKills: one append to dir.
func crashHelper(t *testing.T, dir string) {
	c := New(openTable(t, dir), Options{})
	src := writeParquet(t, "crash.parquet", []numberRow{{Number: ptr[int64](1)}})
	if _, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "crash.parquet"}}); err != nil {
		t.Fatal(err)
	}
	t.Fatal("the append returned: the crash point did not fire")
}
