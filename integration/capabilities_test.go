package integration

// The optional capabilities of a table's storage reach every user of it
// through the mount's wrappers (see delta.LocalDirer): a file staged in
// the inbox of a local table is hard-linked into the table, not copied.

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/mount"
)

func TestInboxLocalTableHardLinks(t *testing.T) {
	cacheDir := t.TempDir()
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{CacheDir: cacheDir})
	data := parquetBytes(t, []basicRow{{ptr("h"), ptr[int64](1), ptr(2.5)}})

	f, err := os.Create(filepath.Join(tdir, "inbox", "linked.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	// The staged bytes are on local disk under the cache dir while the
	// file is open: that inode must become the table's data file.
	var staged []uint64
	filepath.WalkDir(filepath.Join(cacheDir, "inbox-staging"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := os.Stat(p); err == nil && fi.Size() == int64(len(data)) {
				staged = append(staged, fi.Sys().(*syscall.Stat_t).Ino)
			}
		}
		return nil
	})
	if len(staged) != 1 {
		t.Fatalf("found %d staged files of %d bytes under %s, want 1", len(staged), len(data), cacheDir)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close (the commit): %v", err)
	}

	snap := latestSnapshot(t, root)
	var added []string
	for _, lf := range liveFiles(t, snap) {
		if lf.Add.Size == int64(len(data)) && strings.HasPrefix(filepath.Base(lf.Key), "part-00000-") {
			added = append(added, lf.Key)
		}
	}
	if len(added) != 1 {
		t.Fatalf("version %d: %d new data files of %d bytes, want 1", snap.Version(), len(added), len(data))
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(added[0])))
	if err != nil {
		t.Fatal(err)
	}
	if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != staged[0] {
		t.Fatalf("data file %s is inode %d, the staged file was inode %d: it was copied, not hard-linked", added[0], ino, staged[0])
	}
}
