package integration

// Appends to a local table must not depend on where TMPDIR is: gocloud's
// fileblob stages a Put in os.TempDir and renames it into place, which
// fails (EXDEV) when TMPDIR is on another filesystem than the table, as
// with a tmpfs /tmp. Found by the crash tests (files left in TMPDIR).

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func TestAppendTMPDIRElsewhere(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureAppend)
	const other = "/dev/shm"
	var a, b syscall.Stat_t
	if syscall.Stat(root, &a) != nil || syscall.Stat(other, &b) != nil || a.Dev == b.Dev {
		testenv.Skip(t, "no filesystem other than the table's at %s to put TMPDIR on", other)
		return
	}
	tmp, err := os.MkdirTemp(other, "deltafs-tmpdir-")
	if err != nil {
		testenv.Skip(t, "cannot use %s: %v", other, err)
		return
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	v := latestSnapshot(t, root).Version()
	file := filepath.Join(t.TempDir(), "elsewhere.parquet")
	if err := os.WriteFile(file, parquetBytes(t, []basicRow{{Letter: ptr("tmp"), Number: ptr[int64](1)}}), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runAppend(t, []string{"TMPDIR=" + tmp}, 0, root, file)
	if res.err != nil || res.version != v+1 {
		t.Fatalf("append with TMPDIR=%s: version %d, %v\n%s", tmp, res.version, res.err, res.output)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("append left %v in TMPDIR", left)
	}
}
