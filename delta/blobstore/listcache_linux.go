//go:build linux

package blobstore

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// An idle local table's log is listed at every refresh for the names after
// its newest commit: a read of a directory of 100,000 entries, every
// second, for nothing. A directory whose modification time has not changed
// holds the names it held, so the tail a listing kept is kept with the
// directory's identity and times, and handed out again while they stay
// the same. Only where that inference holds:
//   - a local file system whose times come from this kernel's clock (ext4,
//     xfs, btrfs, tmpfs, zfs, overlay): a network file system's times come
//     from another clock, and its attributes may be cached;
//   - a directory last modified well before the listing began (tailSettle),
//     so that a change after the listing cannot carry the same coarse
//     timestamp as the one before it.

// tailSettle is how long before a listing a directory must have last
// changed for the listing to be reused: far above any local file system's
// timestamp granularity.
const tailSettle = 2 * time.Second

// listTail is a remembered listing of a directory's names from from on.
type listTail struct {
	dev, ino     uint64
	mtime, ctime unix.Timespec
	from         string
	names        []string
}

// listTails holds one tail per directory listed; a tail is a few names.
type listTails struct {
	mu sync.Mutex
	m  map[string]*listTail // guarded by mu
}

// maxTails bounds the directories remembered (one per table's log).
const maxTails = 4096

// localTimesFS are the file systems whose directory times listTails trust.
var localTimesFS = map[int64]bool{
	0xEF53:     true, // ext2/3/4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0x01021994: true, // tmpfs
	0x2FC12FC1: true, // zfs
	0x794C7630: true, // overlayfs
}

// dirToken returns the identity and times of dir when listTails may trust
// them, else false.
func dirToken(dir string, before time.Time) (listTail, bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return listTail{}, false
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || !localTimesFS[int64(fs.Type)] {
		return listTail{}, false
	}
	changed := time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
	if c := time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)); c.After(changed) {
		changed = c
	}
	if !changed.Before(before.Add(-tailSettle)) {
		return listTail{}, false
	}
	return listTail{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim, ctime: st.Ctim}, true
}

// get returns the names of dir from from on, when a remembered tail holds
// them and dir has not changed since.
func (l *listTails) get(dir, from string) ([]string, bool) {
	if l == nil {
		return nil, false
	}
	l.mu.Lock()
	t := l.m[dir]
	l.mu.Unlock()
	if t == nil || from < t.from {
		return nil, false
	}
	now, ok := dirToken(dir, time.Now())
	if !ok || now.dev != t.dev || now.ino != t.ino || now.mtime != t.mtime || now.ctime != t.ctime {
		return nil, false
	}
	i, _ := slices.BinarySearch(t.names, from)
	return slices.Clone(t.names[i:]), true
}

// put remembers names, the listing of dir from from on that began at
// start, if dir's times allow.
func (l *listTails) put(dir, from string, start time.Time, names []string) {
	if l == nil {
		return
	}
	tok, ok := dirToken(dir, start)
	if !ok || len(names) > 64 {
		return // a long tail is a full listing: not worth keeping
	}
	tok.from, tok.names = from, slices.Clone(names)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxTails {
		l.m = map[string]*listTail{}
	}
	l.m[dir] = &tok
}
