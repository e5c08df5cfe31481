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
	elem *list.Element // guarded by diskCache.mu: position in diskCache.lru
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
type diskCache struct {
	dir   string
	limit int64
	stats *counters

	mu      sync.Mutex
	entries map[string]*diskEntry // guarded by mu: by file name
	lru     *list.List            // guarded by mu: *diskEntry, most recently used first
	used    int64                 // guarded by mu: sum of entry sizes
	// reserved is what Reserve handed out and Release has not given
	// back: bytes of files kept outside the cache (staged uploads) that
	// share its limit.
	reserved int64                 // guarded by mu
	builds   map[string]*buildCall // guarded by mu: by file name
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
func openDiskCache(dir string, limit int64, stats *counters) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blobcache: disk cache: %w", err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("blobcache: disk cache: %w", err)
	}
	d := &diskCache{dir: dir, limit: limit, stats: stats,
		entries: make(map[string]*diskEntry), lru: list.New(), builds: make(map[string]*buildCall)}
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
	defer d.mu.Unlock()
	for _, f := range files {
		d.addLocked(&diskEntry{name: f.name, size: f.size})
	}
	d.evictLocked()
	return d, nil
}

func (d *diskCache) path(name string) string { return filepath.Join(d.dir, name) }

// addLocked indexes e as the most recently used file.
func (d *diskCache) addLocked(e *diskEntry) {
	e.elem = d.lru.PushFront(e)
	d.entries[e.name] = e
	d.used += e.size
	d.stats.diskBytes.Add(e.size)
}

// evictLocked deletes least recently used files that are not open until
// the total is within the limit (or only open files remain). Files are
// unlinked under the lock so that a concurrent build of the same key cannot
// have its new file deleted by a late unlink.
func (d *diskCache) evictLocked() {
	for el := d.lru.Back(); el != nil && d.used+d.reserved > d.limit; {
		e := el.Value.(*diskEntry)
		el = el.Prev()
		if e.refs > 0 {
			continue
		}
		if err := os.Remove(d.path(e.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // keep accounting it: it still takes space
		}
		d.lru.Remove(e.elem)
		delete(d.entries, e.name)
		d.used -= e.size
		d.stats.diskBytes.Add(-e.size)
		d.stats.diskEvictions.Add(1)
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
	defer d.mu.Unlock()
	d.reserved += n
	d.evictLocked()
	if d.used+d.reserved > d.limit {
		d.reserved -= n
		return fmt.Errorf("%w: %d more bytes do not fit in %d (%d reserved, %d held by open cached files)",
			ErrDiskFull, n, d.limit, d.reserved, d.used)
	}
	return nil
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

// release drops one reference to e and evicts if over the limit.
func (d *diskCache) release(e *diskEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e.refs--
	d.evictLocked()
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
