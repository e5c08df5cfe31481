package integration

// Files an inbox commits into a local table are read by other users: the
// staged file hard-linked into the table as the data
// file, and everything the commit writes, follow the mount's umask.

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

func TestInboxCommitsAreReadableByOthers(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{})
	for i, name := range []string{"a.parquet", "b.parquet"} {
		data := parquetBytes(t, []basicRow{{ptr("m"), ptr(int64(i)), ptr(1.5)}})
		if err := os.WriteFile(filepath.Join(tdir, "inbox", name), data, 0o600); err != nil {
			t.Fatalf("commit %s: %v", name, err)
		}
	}
	before := map[string]bool{}
	filepath.WalkDir(testenv.Fixture(t, fixtureAppend), func(p string, d fs.DirEntry, err error) error {
		if rel, rerr := filepath.Rel(testenv.Fixture(t, fixtureAppend), p); err == nil && rerr == nil {
			before[rel] = true
		}
		return nil
	})
	var written []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		if err == nil && d.Type().IsRegular() && !before[rel] {
			written = append(written, p)
		}
		return nil
	})
	if len(written) < 4 {
		t.Fatalf("files written by two commits: %v, want two data files and two commits", written)
	}
	for _, p := range written {
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 (0666 less umask 022)", p, fi.Mode().Perm())
		}
	}
	for d := root; strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	cmd := exec.Command("sh", append([]string{"-c", `for f; do cat "$f" > /dev/null || exit 1; done`, "sh"}, written...)...)
	testenv.AsUser(t, cmd, testenv.Nobody, testenv.Nobody)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("reading the committed files as nobody: %v: %s", err, out)
	}
}
