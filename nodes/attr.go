package nodes

import (
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

// StableIno returns the inode number of a node from its identity: the
// same (kind, table, version, path) always gets the same number, across
// lookups and across mounts, so that tools comparing inode numbers (tar,
// rsync, find -samefile) see a stable tree. Numbers stay below 2^63, where
// go-fuse's automatic numbers start, and above 1 (the root).
func StableIno(kind, table string, version int64, path string) uint64 {
	var num [20]byte
	h := newInoHash().part(kind).part(table).part(string(strconv.AppendInt(num[:0], version, 10))).part(path)
	return h.ino()
}

// fileIno returns the inode number of a data file of table: the same in
// every version where the file is served with the same bytes (the same
// add action: path, size, time and deletion vector; the same servedAs,
// see snapshotTree), so that a new @latest after an append shares the
// inodes, and with them the kernel's page cache, of every file it did
// not change. It is StableIno(kindFile, table, -1, id) of the file's
// identity id (path, size, time, deletion vector and servedAs, each
// followed by a zero byte but the last), hashed without building id: a
// listing computes it for every entry it returns.
func fileIno(table string, add *delta.Add, servedAs string) uint64 {
	var num [20]byte
	h := newInoHash().part(kindFile).part(table).part("-1").
		part(add.Path).part(string(strconv.AppendInt(num[:0], add.Size, 10))).
		part(string(strconv.AppendInt(num[:0], add.ModificationTime, 10)))
	if dv := add.DeletionVector; dv != nil {
		h = h.bytes(dv.StorageType).bytes(dv.PathOrInlineDV)
		if dv.Offset != nil {
			h = h.bytes("@").bytes(string(strconv.AppendInt(num[:0], int64(*dv.Offset), 10)))
		}
	}
	return h.part("").part(servedAs).ino()
}

// inoHash is 64-bit FNV-1a (hash/fnv's New64a), by value: no allocation.
type inoHash uint64

func newInoHash() inoHash { return 14695981039346656037 }

// bytes hashes s.
func (h inoHash) bytes(s string) inoHash {
	for i := 0; i < len(s); i++ {
		h ^= inoHash(s[i])
		h *= 1099511628211
	}
	return h
}

// part hashes s and the zero byte that ends each field.
func (h inoHash) part(s string) inoHash { return h.bytes(s).bytes("\x00") }

// ino is the hash as an inode number: below 2^63, above 1.
func (h inoHash) ino() uint64 {
	n := uint64(h) &^ (1 << 63)
	if n < 2 {
		n += 2
	}
	return n
}

// FillAttr sets the fields every node reports: mode is the file type and
// permission bits (see access), own the owner.
func FillAttr(a *fuse.Attr, ino uint64, mode uint32, own fuse.Owner, size int64, mtime time.Time) {
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
