package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// versionInodes returns the inode number and bytes of every data file of
// a snapshot directory.
func versionInodes(t *testing.T, dir string) (map[string]uint64, map[string][]byte) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	inos, data := map[string]uint64{}, map[string][]byte{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inos[e.Name()], data[e.Name()] = st.Ino, b
	}
	return inos, data
}

// TestUnchangedFilesKeepTheirInode: a data file served with the same
// bytes in several versions is one inode (and one page cache) in all of
// them, so a new @latest after an append keeps every unchanged file warm; a
// file whose served bytes change (the schema grew,
// so it gains a null column) is another inode.
func TestUnchangedFilesKeepTheirInode(t *testing.T) {
	testenv.RequireFUSE(t)
	root := testenv.CopyFixture(t, fixtureAppend)
	mnt := mountFS(t, mount.Config{Refresh: 100 * time.Millisecond, Sources: []mount.Source{{Name: "t", URL: root}}})
	tdir := filepath.Join(mnt, "t")
	v := latestSnapshot(t, root).Version()
	before, beforeData := versionInodes(t, filepath.Join(tdir, fmt.Sprintf("@v%d", v)))
	data := parquetBytes(t, []basicRow{{ptr("new"), ptr[int64](7), ptr(7.5)}})
	if err := os.WriteFile(filepath.Join(tdir, "inbox", "new.parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	after, afterData := versionInodes(t, filepath.Join(tdir, fmt.Sprintf("@v%d", v+1)))
	if len(after) != len(before)+1 {
		t.Fatalf("%d files after the append, %d before", len(after), len(before))
	}
	for name, ino := range before {
		if after[name] != ino {
			t.Errorf("%s: inode %d in @v%d, %d in @v%d: an unchanged file is another inode", name, ino, v, after[name], v+1)
		}
		if !bytes.Equal(beforeData[name], afterData[name]) {
			t.Errorf("%s: bytes differ between versions", name)
		}
	}
	grow(t, root, `{"name":"extra","type":"long","nullable":true,"metadata":{}}`)
	grown := filepath.Join(tdir, fmt.Sprintf("@v%d", v+2))
	if !eventually(5*time.Second, func() bool { _, err := os.Stat(grown); return err == nil }) {
		t.Fatalf("%s: not there after the metadata commit", grown)
	}
	third, thirdData := versionInodes(t, grown)
	for name, ino := range after {
		if third[name] == ino || bytes.Equal(thirdData[name], afterData[name]) {
			t.Errorf("%s: inode %d in @v%d and %d in @v%d, bytes equal %v: served with a new column, it must be another inode",
				name, ino, v+1, third[name], v+2, bytes.Equal(thirdData[name], afterData[name]))
		}
	}
}
