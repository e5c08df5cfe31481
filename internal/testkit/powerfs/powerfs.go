// Package powerfs is an in-memory file system, served over FUSE, that
// models what a power loss keeps: the strictest reading of POSIX that
// journaling file systems are allowed to give.
//
//   - A file's bytes survive only as they were at its last fsync (or
//     fdatasync); bytes written since are lost, and a file never fsynced
//     comes back empty.
//   - A directory's entries (names made by create, mkdir, link, rename,
//     and names removed by unlink, rmdir, rename) survive only as they
//     were at the directory's last fsync. fsync of a file does not make
//     its name durable, and a directory made by mkdir exists after a loss
//     only when its parent was fsynced after the mkdir.
//
// It is for tests of durability: a test serves an FS, runs the code
// under test against the mount, cuts the power after a chosen number of
// mutating requests (Arm; every request from then on fails with EIO, as
// a dead disk would), unmounts, applies the loss (PowerLoss) and mounts
// again to see what a reboot would find. Only tests import it.
package powerfs

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FS is the in-memory file system and its durable image. It is safe for
// concurrent use; one mutex guards everything (a test file system, not a
// fast one).
type FS struct {
	mu      sync.Mutex
	root    *node  // guarded by mu
	nextIno uint64 // guarded by mu
	ops     int64  // guarded by mu: mutating requests served
	lossAt  int64  // guarded by mu: power is lost at this mutating request (0: not armed)
	down    bool   // guarded by mu: the power is off: every request fails with EIO
	stats   Stats  // guarded by mu
}

// Stats counts what the FS served and what power losses dropped.
type Stats struct {
	Ops, FileSyncs, DirSyncs, Losses int64
	// LostData counts files whose bytes a loss changed (unsynced writes
	// dropped); LostNames directory entries a loss removed or brought
	// back (unsynced creates, links, renames, unlinks).
	LostData, LostNames int64
}

// node is a file or a directory. Its durable state is what a power loss
// keeps (see the package comment).
type node struct {
	ino   uint64
	dir   bool
	perm  uint32
	mtime time.Time
	nlink uint32 // names in the current tree

	data, synced []byte // files: current and durable bytes

	entries, syncedEntries map[string]*node // directories: current and durable names
}

// New returns an empty FS (a root directory, durable).
func New() *FS {
	f := &FS{nextIno: 1}
	f.root = f.newNodeLocked(true, 0o755)
	f.root.nlink = 1
	return f
}

func (f *FS) newNodeLocked(dir bool, perm uint32) *node {
	f.nextIno++
	n := &node{ino: f.nextIno, dir: dir, perm: perm & 0o7777, mtime: time.Now()}
	if dir {
		n.entries, n.syncedEntries = map[string]*node{}, map[string]*node{}
	}
	return n
}

// Load copies the local directory src into the FS as dst (a '/'-separated
// path, created), every file and name durable, as if fsynced long ago.
func (f *FS) Load(src, dst string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	parent := f.root
	for _, name := range strings.Split(strings.Trim(dst, "/"), "/") {
		child := parent.entries[name]
		if child == nil {
			child = f.newNodeLocked(true, 0o755)
			parent.entries[name], parent.syncedEntries[name] = child, child
			child.nlink = 1
		}
		parent = child
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == src {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dir := parent
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for _, name := range parts[:len(parts)-1] {
			dir = dir.entries[name]
		}
		n := f.newNodeLocked(d.IsDir(), 0o644)
		if d.IsDir() {
			n.perm = 0o755
		} else {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.data, n.synced = data, slices.Clone(data)
		}
		n.nlink = 1
		name := parts[len(parts)-1]
		dir.entries[name], dir.syncedEntries[name] = n, n
		return nil
	})
}

// Arm cuts the power when the FS has served after more mutating
// requests (writes, truncations, creates, mkdirs, links, renames,
// unlinks, rmdirs, fsyncs): that request and every later one fail with
// EIO until PowerLoss. after <= 0 disarms.
func (f *FS) Arm(after int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lossAt = 0
	if after > 0 {
		f.lossAt = f.ops + after
	}
}

// CutPower cuts the power now (Arm with the next request).
func (f *FS) CutPower() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = true
	f.lossAt = 0
}

// Down reports whether the power is off (an armed loss fired, or CutPower).
func (f *FS) Down() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

// Armed reports whether a loss is armed and has not fired yet.
func (f *FS) Armed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lossAt > 0
}

// Stats returns the counts so far.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// PowerLoss applies a power loss: every file and directory reverts to its
// durable state, what is no longer reachable is gone, and the power is
// back on. Unmount first: the kernel's caches of the old state must go.
func (f *FS) PowerLoss() {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[*node]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if seen[n] {
			n.nlink++
			return
		}
		seen[n] = true
		n.nlink = 1
		if !n.dir {
			if !slices.Equal(n.data, n.synced) {
				f.stats.LostData++
				n.mtime = time.Now() // what a reader sees changed
			}
			n.data = slices.Clone(n.synced)
			return
		}
		f.stats.LostNames += int64(namesDiffer(n.entries, n.syncedEntries))
		n.entries = maps.Clone(n.syncedEntries)
		for _, name := range sortedNames(n.entries) {
			walk(n.entries[name])
		}
	}
	walk(f.root)
	f.down = false
	f.lossAt = 0
	f.stats.Losses++
}

// namesDiffer counts the names whose target differs between a and b.
func namesDiffer(a, b map[string]*node) int {
	n := 0
	for k, v := range a {
		if b[k] != v {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}

func sortedNames(m map[string]*node) []string {
	out := slices.Collect(maps.Keys(m))
	sort.Strings(out)
	return out
}

// begin starts a request: EIO when the power is off, or when this
// mutating request is the one an armed loss fires at.
func (f *FS) beginLocked(mutating bool) syscall.Errno {
	if f.down {
		return syscall.EIO
	}
	if !mutating {
		return 0
	}
	f.ops++
	f.stats.Ops++
	if f.lossAt > 0 && f.ops >= f.lossAt {
		f.down = true
		f.lossAt = 0
		return syscall.EIO
	}
	return 0
}

// String describes the FS for messages.
func (f *FS) String() string {
	s := f.Stats()
	return fmt.Sprintf("powerfs: %d mutating requests, %d file and %d directory fsyncs, %d losses (dropped: %d files' unsynced bytes, %d unsynced names)",
		s.Ops, s.FileSyncs, s.DirSyncs, s.Losses, s.LostData, s.LostNames)
}
