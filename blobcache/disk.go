package blobcache

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// tmpPrefix starts the names of files being built; New deletes them.
const tmpPrefix = "tmp-"

// diskEntry is one complete derived file under its final name.
type diskEntry struct {
	name string
	size int64
	refs int           // guarded by diskCache.mu: open DiskFiles
	elem *list.Element // guarded by diskCache.mu: position in diskCache.lru; nil while open
	// verified is the identity the file of a DerivedChecked entry had
	// when this process built or last checked it; zero: never.
	verified fileIdentity // guarded by diskCache.mu
}

// buildCall is one build of a derived file in progress; err is set before
// done is closed.
type buildCall struct {
	done chan struct{}
	err  error
}

// diskCache indexes the derived files of one directory. A file is under its
// final name only when complete (it was fsynced before its rename), so every
// entry is a complete file; files being built are not entries.
//
// Its bytes on disk are bounded by limit whatever is open: builds are
// charged as they write (building) and fail with ErrDiskFull past the
// limit, so a reader holding files open makes new files uncacheable (the
// caller serves them another way) instead of growing the cache. Derived
// files (used + building) never take more than derivedCapLocked, which
// leaves headroom for Reserve (staged inbox files): however many files
// readers hold open, a Reserve within the headroom fits.
//
// No file system call runs under mu: eviction picks its victims under the
// lock (they leave the index at once, so their bytes are free for the
// accounting) and unlinks them after it, and the LRU holds only the files
// that are not open, so that picking walks no further than the victims.
// A build of a name whose unlink is still pending waits for it before
// renaming its file into place (removing), so that the late unlink cannot
// delete the new file.
type diskCache struct {
	dir      string
	limit    int64
	headroom int64 // of limit, never taken by derived files (Options.Headroom)
	stats    *counters

	mu      sync.Mutex
	entries map[string]*diskEntry // guarded by mu: by file name
	lru     *list.List            // guarded by mu: *diskEntry not open, most recently used first
	used    int64                 // guarded by mu: sum of entry sizes
	// reserved is what Reserve handed out and Release has not given
	// back: bytes of files kept outside the cache (staged uploads) that
	// share its limit.
	reserved int64 // guarded by mu
	// building is what builds in progress have written (charged in
	// chunks ahead of their writes; see grow).
	building int64                    // guarded by mu
	builds   map[string]*buildCall    // guarded by mu: by file name
	removing map[string]chan struct{} // guarded by mu: names being unlinked; closed when done
}

// fileName returns the file name of a derived key: its SHA-256 in hex.
func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func isFileName(name string) bool {
	if len(name) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}

// openDiskCache creates dir if needed, deletes leftover temporary files,
// indexes the derived files there (least recently modified is evicted
// first) and evicts down to limit. Other files are left alone.
func openDiskCache(dir string, limit, headroom int64, stats *counters) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blobcache: disk cache: %w", err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("blobcache: disk cache: %w", err)
	}
	d := &diskCache{dir: dir, limit: limit, headroom: headroom, stats: stats, entries: make(map[string]*diskEntry),
		lru: list.New(), builds: make(map[string]*buildCall), removing: make(map[string]chan struct{})}
	type found struct {
		name  string
		size  int64
		mtime time.Time
	}
	var files []found
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, tmpPrefix):
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("blobcache: remove leftover: %w", err)
			}
		case de.Type().IsRegular() && isFileName(name):
			info, err := de.Info()
			if err != nil {
				continue // removed meanwhile
			}
			files = append(files, found{name, info.Size(), info.ModTime()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mtime.Before(files[j].mtime) })
	d.mu.Lock()
	for _, f := range files {
		d.addLocked(&diskEntry{name: f.name, size: f.size})
	}
	victims := d.evictLocked()
	d.mu.Unlock()
	d.unlink(victims)
	return d, nil
}

func (d *diskCache) path(name string) string { return filepath.Join(d.dir, name) }

// addLocked indexes e as the most recently used file (in the LRU unless
// it is open).
func (d *diskCache) addLocked(e *diskEntry) {
	if e.refs == 0 {
		e.elem = d.lru.PushFront(e)
	}
	d.entries[e.name] = e
	d.used += e.size
	d.stats.diskBytes.Add(e.size)
}

// dropLocked removes e from the index and the accounting.
func (d *diskCache) dropLocked(e *diskEntry) {
	if e.elem != nil {
		d.lru.Remove(e.elem)
		e.elem = nil
	}
	delete(d.entries, e.name)
	d.used -= e.size
	d.stats.diskBytes.Add(-e.size)
}

// derivedCapLocked is what derived files (built and being built) may take:
// the limit less the headroom kept for Reserve, or less what Reserve
// holds when that is more.
func (d *diskCache) derivedCapLocked() int64 {
	return d.limit - max(d.headroom, d.reserved)
}

// overLocked reports whether the cache holds more than its bounds allow.
func (d *diskCache) overLocked() bool {
	return d.used+d.building+d.reserved > d.limit || d.used+d.building > d.derivedCapLocked()
}

// evictLocked picks least recently used files that are not open until the
// cache is within its bounds (or no file that is not open remains), drops
// them from the index and marks their names as being removed. The caller
// must pass them to unlink once it has released mu.
func (d *diskCache) evictLocked() []*diskEntry {
	var victims []*diskEntry
	for d.overLocked() && d.lru.Len() > 0 {
		e := d.lru.Back().Value.(*diskEntry)
		d.dropLocked(e)
		d.removing[e.name] = make(chan struct{})
		victims = append(victims, e)
	}
	return victims
}

// removeFile is os.Remove; tests replace it to see what runs meanwhile.
var removeFile = os.Remove

// unlink deletes the files evictLocked picked, without holding mu. A file
// that cannot be deleted is indexed again as the least recently used (it
// still takes space).
func (d *diskCache) unlink(victims []*diskEntry) {
	for _, e := range victims {
		err := removeFile(d.path(e.name))
		d.mu.Lock()
		if err != nil && !errors.Is(err, fs.ErrNotExist) && d.entries[e.name] == nil {
			d.addLocked(e)
			d.lru.MoveToBack(e.elem)
		} else {
			d.stats.diskEvictions.Add(1)
		}
		close(d.removing[e.name])
		delete(d.removing, e.name)
		d.mu.Unlock()
	}
}

// waitRemoved waits until no unlink of name is pending, so that a file
// about to be renamed to name is not deleted by it.
func (d *diskCache) waitRemoved(name string) {
	for {
		d.mu.Lock()
		ch := d.removing[name]
		d.mu.Unlock()
		if ch == nil {
			return
		}
		<-ch
	}
}

// ErrDiskFull reports a Reserve the disk limit cannot hold, even with
// every file that is not open evicted.
var ErrDiskFull = errors.New("blobcache: disk limit reached")

// Reserve takes n bytes of the disk limit for a file kept outside the
// cache (a staged upload), evicting files that are not open to make room.
// It fails with an error wrapping ErrDiskFull when the limit cannot hold
// them. Release gives the bytes back.
func (c *Cache) Reserve(n int64) error {
	d := c.disk
	if d == nil || n <= 0 {
		return nil
	}
	d.mu.Lock()
	d.reserved += n
	victims := d.evictLocked()
	var err error
	if d.used+d.building+d.reserved > d.limit {
		d.reserved -= n
		err = fmt.Errorf("%w: %d more bytes do not fit in %d (%d reserved, %d held by open cached files)",
			ErrDiskFull, n, d.limit, d.reserved, d.used+d.building)
	}
	d.mu.Unlock()
	d.unlink(victims)
	return err
}

// grow charges need more bytes to the builds in progress, evicting files
// that are not open to make room, and up to ahead bytes more where they
// fit without evicting; it returns what it charged. Past the derived
// files' bound it charges nothing and fails with an error wrapping
// ErrDiskFull.
func (d *diskCache) grow(need, ahead int64) (int64, error) {
	d.mu.Lock()
	d.building += need
	victims := d.evictLocked()
	var err error
	if c := d.derivedCapLocked(); d.overLocked() {
		d.building -= need
		need, err = 0, fmt.Errorf("%w: %d bytes of rewritten files open or being built fill what the disk cache gives them (%d: --cache-size less what the inbox may need)",
			ErrDiskFull, d.used+d.building, c)
	} else {
		room := min(d.derivedCapLocked()-d.used-d.building, d.limit-d.used-d.building-d.reserved)
		ahead = max(min(ahead, room), 0)
		d.building += ahead
		need += ahead
	}
	d.mu.Unlock()
	d.unlink(victims)
	return need, err
}

// Release gives back n bytes taken by Reserve.
func (c *Cache) Release(n int64) {
	d := c.disk
	if d == nil || n <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reserved = max(d.reserved-n, 0)
}

// release drops one reference to e (the last puts it in the LRU as the
// most recently used) and evicts if over the limit.
func (d *diskCache) release(e *diskEntry) {
	d.mu.Lock()
	e.refs--
	if e.refs == 0 && d.entries[e.name] == e {
		e.elem = d.lru.PushFront(e)
	}
	victims := d.evictLocked()
	d.mu.Unlock()
	d.unlink(victims)
}

// DiskFile is an open, complete derived file. It stays on disk at least
// until Close; it is safe for concurrent use.
type DiskFile struct {
	d    *diskCache
	e    *diskEntry
	f    *os.File
	size int64 // what the build wrote (a checked file's trailer excluded)
	once sync.Once
}

// Path returns the file's path on the local disk. It is valid until Close.
func (f *DiskFile) Path() string { return f.d.path(f.e.name) }

// Size returns the size in bytes of what the build wrote.
func (f *DiskFile) Size() int64 { return f.size }

// ReadAt implements io.ReaderAt over the file, like os.File.ReadAt.
func (f *DiskFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Close releases the file; it may be evicted afterwards. It is idempotent.
func (f *DiskFile) Close() error {
	var err error
	f.once.Do(func() {
		err = f.f.Close()
		f.d.release(f.e)
	})
	return err
}
