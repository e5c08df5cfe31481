package nodes

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fnvIno is how inode numbers were first computed (hash/fnv over each
// field and a zero byte): numbers must not change between releases, since
// tools compare them across mounts (rsync, tar's incremental dumps).
func fnvIno(kind, table string, version int64, path string) uint64 {
	h := fnv.New64a()
	for _, s := range []string{kind, table, strconv.FormatInt(version, 10), path} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	n := h.Sum64() &^ (1 << 63)
	if n < 2 {
		n += 2
	}
	return n
}

func TestInodeNumbersAreStable(t *testing.T) {
	for _, c := range []struct {
		kind, table string
		version     int64
		path        string
	}{
		{kindSnapDir, "orders", 42, "region=eu"},
		{kindTable, "t", -1, ""},
		{kindHistory, "üñí", 1 << 40, "a/b\x00c"},
	} {
		if got, want := StableIno(c.kind, c.table, c.version, c.path), fnvIno(c.kind, c.table, c.version, c.path); got != want {
			t.Errorf("StableIno%v = %d, want %d", c, got, want)
		}
	}
	off := int32(7)
	for _, a := range []*delta.Add{
		{Path: "part-0.parquet", Size: 123, ModificationTime: 1735689600000},
		{Path: "x=1/part-1.parquet", Size: 1 << 40, ModificationTime: -5,
			DeletionVector: &delta.DeletionVector{StorageType: "u", PathOrInlineDV: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &off}},
		{Path: "p", DeletionVector: &delta.DeletionVector{StorageType: "i", PathOrInlineDV: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}},
	} {
		for _, servedAs := range []string{"", "mapped:name"} {
			id := fmt.Sprintf("%s\x00%d\x00%d\x00%s\x00%s", a.Path, a.Size, a.ModificationTime, a.DeletionVector.UniqueID(), servedAs)
			if got, want := fileIno("t", a, servedAs), fnvIno(kindFile, "t", -1, id); got != want {
				t.Errorf("fileIno(%s, %q) = %d, want %d", a.Path, servedAs, got, want)
			}
		}
	}
}

func BenchmarkFileIno(b *testing.B) {
	a := &delta.Add{Path: "region=r042/part-00042-3e7b5b7c-1c3a-4a4e-9d6f-5b9a1e2f3c4d.c000.snappy.parquet", Size: 1234, ModificationTime: 1735689600000}
	b.ReportAllocs()
	for b.Loop() {
		fileIno("t", a, "")
	}
}

// Entries without a commit time (the root, status files, inbox/, @<time>
// links) carry the mount's start time, not 1970-01-01.
func TestFillAttrNoZeroTime(t *testing.T) {
	var a fuse.Attr
	FillAttr(&a, 1, syscall.S_IFDIR|0o555, fuse.Owner{}, 0, time.Time{})
	if a.Mtime == 0 || a.Ctime == 0 || int64(a.Mtime) != started.Unix() {
		t.Errorf("mtime %d ctime %d, want the start time %d", a.Mtime, a.Ctime, started.Unix())
	}
}

// Out of file descriptors is EMFILE / ENFILE, not EIO: the
// caller learns which limit to raise.
func TestFdLimitErrnos(t *testing.T) {
	env := NewEnv(Options{})
	for _, c := range []struct {
		err  error
		want syscall.Errno
	}{
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, syscall.EMFILE},
		{fmt.Errorf("open data file: %w", &os.PathError{Op: "open", Path: "x", Err: syscall.ENFILE}), syscall.ENFILE},
		{errors.New("bad bytes"), syscall.EIO},
	} {
		if got := env.DataErrno("open", c.err); got != c.want {
			t.Errorf("DataErrno(%v) = %v, want %v", c.err, got, c.want)
		}
		if got := env.metaErrno("lookup", c.err); got != c.want {
			t.Errorf("metaErrno(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
