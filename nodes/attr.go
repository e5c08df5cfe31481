package nodes

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
)

// Node kinds, part of the stable inode hash so that a directory and a
// file of the same path never share a number.
const (
	kindTable    = "table"
	kindSnapDir  = "dir"
	kindFile     = "file"
	kindLatest   = "latest"
	kindTimeLink = "time"
	kindHistory  = "history"
	kindReason   = "reason"
)

// stableIno returns the inode number of a node from its identity: the
// same (kind, table, version, path) always gets the same number, across
// lookups and across mounts, so that tools comparing inode numbers (tar,
// rsync, find -samefile) see a stable tree. Numbers stay below 2^63, where
// go-fuse's automatic numbers start, and above 1 (the root).
func stableIno(kind, table string, version int64, path string) uint64 {
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

// fileIno returns the inode number of a data file of table: the same in
// every version where the file is served with the same bytes (the same
// add action: path, size, time and deletion vector; the same servedAs,
// see snapshotTree), so that a new @latest after an append shares the
// inodes, and with them the kernel's page cache, of every file it did
// not change.
func fileIno(table string, add *delta.Add, servedAs string) uint64 {
	id := fmt.Sprintf("%s\x00%d\x00%d\x00%s\x00%s", add.Path, add.Size, add.ModificationTime, add.DeletionVector.UniqueID(), servedAs)
	return stableIno(kindFile, table, -1, id)
}

// fillAttr sets the fields every node reports: mode is the file type and
// permission bits (see access), own the owner.
func fillAttr(a *fuse.Attr, ino uint64, mode uint32, own fuse.Owner, size int64, mtime time.Time) {
	a.Ino = ino
	a.Mode = mode
	a.Owner = own
	a.Size = uint64(size)
	a.Nlink = 1
	if mode&syscall.S_IFDIR != 0 {
		a.Nlink = 2
	}
	if mtime.IsZero() {
		mtime = started // the root, status files, inbox/, @<time> links
	}
	a.SetTimes(&mtime, &mtime, &mtime)
}

// started is when this process started: the time of the entries that have
// no commit of their own, instead of 1970-01-01.
var started = time.Now()

const modeSymlink = syscall.S_IFLNK | 0o777
