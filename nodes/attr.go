package nodes

import (
	"hash/fnv"
	"strconv"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
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
