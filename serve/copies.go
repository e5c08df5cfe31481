package serve

// Materialized copies: a rewritten file opened again gets a whole copy in
// the disk cache, checked by its sum, which later opens pass through.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
)

// A rewritten file (deleted rows removed, columns reshaped or renamed) is
// served as a composite of stored ranges and a patch, which the kernel
// cannot pass through: every read, even of pages it has seen, costs a
// round trip to this process. A file opened a second time is worth more:
// a materialized copy, the served bytes whole in one file of the disk
// cache, is built in the background, and later opens hand that file to
// the kernel (FUSE passthrough), so re-reads run at the page cache's
// speed. A file read once never costs a copy (writing it is as much disk
// traffic as reading it); the second open is the sign of a file read
// again and again (a dashboard, a notebook re-running its query).
//
// A copy is a Derived entry (written to a temporary, fsynced, renamed: on
// disk whole or not at all) holding exactly the served bytes, since a
// passthrough reader reads the backing file to its end. Its CRC-32C and
// size are a second entry beside it. A copy this process did not build is
// checked against them by the open that finds it (copyOnDisk), and
// trusted while its inode, size and ctime stay the same; a copy that
// fails the check, or whose sum is gone, is discarded and built again.
// The sum also gives the file's served size to a stat without reading the
// rewrite's patch. An evicted copy falls back to the composite: never an
// error.

// copyMin is the smallest rewritten file given a copy: smaller files are
// not passed through (nodes' passthroughMin), so a copy would gain
// nothing.
var copyMin int64 = 1 << 20 // a variable for tests

// copyOpens is the open of a rewritten file that schedules its copy.
const copyOpens = 2

// copyState tracks a mount's copies (Caches): opens counted per file,
// copies being built or checked, and copies whose bytes were checked (or
// built) here. Its maps are keyed by a 128-bit hash of the copy's key
// (copyID), not the key (some hundred bytes), so that an entry costs
// about copyEntryBytes whatever the paths.
type copyState struct {
	opens *lru.Cache[hashID, int] // copy -> opens seen; bounded

	mu       sync.Mutex
	busy     map[string]bool                   // guarded by mu: copy keys being built or checked
	verified map[hashID]blobcache.FileIdentity // guarded by mu: copies known good, by identity
	sem      chan struct{}                     // one copy built or checked at a time
}

// copyOpensKept bounds the files whose opens are counted; maxTrusted the
// copies remembered as checked. An entry of either costs at most
// copyEntryBytes (its hash, its value, the map's or the LRU list's
// overhead: 122 measured, TestCacheUnitsCoverTheHeap), so both hold
// 16 MiB at most.
const (
	copyOpensKept  = 64 << 10
	maxTrusted     = 64 << 10
	copyEntryBytes = 128
)

func newCopyState() *copyState {
	opens, _ := lru.New[hashID, int](copyOpensKept)
	return &copyState{opens: opens, busy: map[string]bool{}, verified: map[hashID]blobcache.FileIdentity{}, sem: make(chan struct{}, 1)}
}

// clear forgets the opens counted and the copies checked (Caches.Close);
// the copies being built are their Tables' to stop.
func (s *copyState) clear() {
	s.opens.Purge()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verified = map[hashID]blobcache.FileIdentity{}
}

// len is the number of files whose opens are counted or whose copy is
// checked.
func (s *copyState) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens.Len() + len(s.verified)
}

// isBusy reports whether the copy of the rewrite keyed key is being built
// or checked.
func (s *copyState) isBusy(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy[key]
}

// trusted reports whether df is the copy dataKey as this process checked
// or built it.
func (s *copyState) trusted(dataKey string, df *blobcache.DiskFile) bool {
	id, ok := df.Identity()
	s.mu.Lock()
	defer s.mu.Unlock()
	return ok && s.verified[hashOf(dataKey)] == id
}

// trust records a copy known good.
func (s *copyState) trust(dataKey string, id blobcache.FileIdentity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.verified) >= maxTrusted {
		clear(s.verified) // copies are checked again
	}
	s.verified[hashOf(dataKey)] = id
}

// copyKeys are the cache keys of the copy of the rewrite keyed key and of
// its sum.
func copyKeys(key string) (data, sum string) {
	return "deltafs-copy/v1|" + key, "deltafs-copy-sum/v1|" + key
}

// copyContent serves a materialized copy: a local file holding exactly the
// served bytes, which the kernel may pass through.
type copyContent struct {
	df *blobcache.DiskFile
}

var _ Content = (*copyContent)(nil)

func (c *copyContent) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return c.df.ReadAt(p, off)
}
func (c *copyContent) Size() int64    { return c.df.Size() }
func (c *copyContent) File() *os.File { return c.df.File() }
func (c *copyContent) Close() error   { return c.df.Close() }

// IsCopy reports whether c is a rewritten file served from its
// materialized copy.
func IsCopy(c Content) bool {
	_, ok := c.(*copyContent)
	return ok
}

// copyOnDisk returns the copy of the rewrite keyed key of f when it is on
// disk and good, else nil. A copy this process has not checked (one an
// earlier mount built) is checked now, in the open, against its sum: that
// reads the copy once, as much as checking the rewrite's patch would, and
// the reader then reads it through passthrough, so a later mount's first
// read of a file costs about a plain read. A copy that fails is
// discarded, and refused says which and the size its sum gave, which a
// stat may have served (Size).
func (t *Table) copyOnDisk(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile, key string) (c Content, refused *copyRefusal) {
	if t.cache == nil {
		return nil, nil
	}
	dataKey, _ := copyKeys(key)
	df, ok := t.cache.Lookup(dataKey)
	if !ok {
		return nil, nil
	}
	if t.copies.trusted(dataKey, df) {
		return &copyContent{df: df}, nil
	}
	if t.copies.isBusy(key) { // being built: its sum may not be written yet
		df.Close()
		return nil, nil
	}
	size, _, err := t.readCopySum(key)
	switch {
	case errors.Is(err, errNoSum): // evicted before its copy
		t.log.Debug("deltafs: materialized copy without its sum discarded", "table", t.name, "copy", df.Path())
		df.Discard() // without its sum it can never be checked
	case err != nil:
		t.damaged(snap, f, df.Path(), err.Error())
		df.Discard()
	case t.checkCopyFile(ctx, snap, f, key, df, size):
		return &copyContent{df: df}, nil
	default:
		refused = &copyRefusal{path: df.Path(), size: size}
	}
	df.Close()
	return nil, refused
}

// copyRefusal is a copy found damaged by an open: its file, and the size
// its sum gives.
type copyRefusal struct {
	path string
	size int64
}

// errNoSum is readCopySum's error for a copy without a sum.
var errNoSum = errors.New("its sum is gone from the cache")

// readCopySum returns the size and CRC-32C the sum entry of the copy of
// the rewrite keyed key records: the rewrite's served size, known without
// its patch. A sum that is there but not one copySum wrote is an error
// naming its file.
func (t *Table) readCopySum(key string) (size int64, crc uint32, err error) {
	_, sumKey := copyKeys(key)
	sf, ok := t.cache.Lookup(sumKey)
	if !ok {
		return 0, 0, errNoSum
	}
	defer sf.Close()
	b := make([]byte, copySumLen)
	if n, _ := sf.ReadAt(b, 0); n != copySumLen || sf.Size() != copySumLen || string(b[:4]) != "dfc1" {
		sf.Discard()
		return 0, 0, fmt.Errorf("its sum %s is not a copy's sum (%d bytes)", sf.Path(), sf.Size())
	}
	return int64(binary.LittleEndian.Uint64(b[4:])), binary.LittleEndian.Uint32(b[12:]), nil
}

// sumSize returns the served size of f from the sum of its copy (keyed
// key) when the copy on disk has that size: an earlier mount's copy,
// whose rewrite's patch then need not be read for a stat. A sum that
// disagrees with its copy is a damaged cache file: both are discarded,
// saying so, and the caller computes the size from the rewrite.
func (t *Table) sumSize(snap *delta.Snapshot, f *delta.LiveFile, key string) (int64, bool) {
	if t.cache == nil {
		return 0, false
	}
	dataKey, sumKey := copyKeys(key)
	df, ok := t.cache.Lookup(dataKey)
	if !ok {
		return 0, false // no copy: the open uses the rewrite, which sizes it
	}
	defer df.Close()
	n, _, err := t.readCopySum(key)
	if err == nil && n == df.Size() {
		return n, true
	}
	if errors.Is(err, errNoSum) {
		return 0, false // being built, or its sum evicted: the open decides
	}
	if err == nil {
		err = fmt.Errorf("its sum gives %d bytes, the copy has %d", n, df.Size())
	}
	t.damaged(snap, f, df.Path(), err.Error())
	df.Discard()
	if sf, ok := t.cache.Lookup(sumKey); ok {
		sf.Discard()
		sf.Close()
	}
	return 0, false
}

// ErrDamagedCache marks a file of the local disk cache found damaged (a
// materialized copy or its sum): the cache's fault, not the table's. The
// file is discarded and built again; the table and its log are fine.
var ErrDamagedCache = errors.New("damaged local cache file")

// CacheFileError is a damaged file of the local disk cache, with what it
// served. It wraps ErrDamagedCache.
type CacheFileError struct {
	Path    string // the cache file
	Table   string // the table, version and data file it served
	Version int64
	File    string
	Reason  string
}

func (e *CacheFileError) Error() string {
	return fmt.Sprintf("%v %s (materialized copy of table %s, version %d, file %s): %s; discarded, built again from the table",
		ErrDamagedCache, e.Path, e.Table, e.Version, e.File, e.Reason)
}

func (e *CacheFileError) Unwrap() error { return ErrDamagedCache }

// damaged logs that the copy at path of f, or its sum, is damaged and
// discarded: the file is served from its rewrite.
func (t *Table) damaged(snap *delta.Snapshot, f *delta.LiveFile, path, reason string) {
	err := &CacheFileError{Path: path, Table: t.name, Version: snap.Version(), File: f.Key, Reason: reason}
	t.log.Warn("deltafs: "+err.Error()+"; the file is served from its rewrite", "cache", path, "table", t.name, "version", snap.Version(), "file", f.Key)
}

// countOpen counts an open of the rewrite keyed key (size bytes) served
// without a copy: the copyOpens-th schedules one.
func (t *Table) countOpen(snap *delta.Snapshot, f *delta.LiveFile, key string, size int64) {
	if size < copyMin || t.cache == nil {
		return
	}
	dataKey, _ := copyKeys(key)
	id := hashOf(dataKey)
	n, _ := t.copies.opens.Get(id)
	t.copies.opens.Add(id, n+1)
	if n+1 >= copyOpens {
		t.startCopy(key, func(ctx context.Context) { t.buildCopy(ctx, snap, f, key, size) })
	}
}

// copyTimeout bounds one copy's build or check.
const copyTimeout = 10 * time.Minute

// startCopy runs work on key's copy in the background unless some work
// on it is under way, one copy at a time for the mount.
func (t *Table) startCopy(key string, work func(ctx context.Context)) {
	copies := t.copies
	copies.mu.Lock()
	if copies.busy[key] {
		copies.mu.Unlock()
		return
	}
	copies.busy[key] = true
	copies.mu.Unlock()
	t.background(copyTimeout, func(ctx context.Context) {
		defer func() {
			copies.mu.Lock()
			delete(copies.busy, key)
			copies.mu.Unlock()
		}()
		select {
		case copies.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-copies.sem }()
		work(ctx)
	})
}

// copyNotBuilt logs why a copy was not built (copyNotKept).
func (t *Table) copyNotBuilt(f *delta.LiveFile, err error) {
	t.copyNotKept(f, "deltafs: materialized copy not built; the file is served as before", err)
}

// copyNotKept logs msg, that a copy was not built or not kept because of
// err: a warning, an info line when the disk cache is full of files held
// open (as often as copies are tried then; the cache's metrics say so
// too), and a debug line when Close stopped it (the mount is going away:
// a mount unmounted right after a file's second open would otherwise
// warn of what nobody lost).
func (t *Table) copyNotKept(f *delta.LiveFile, msg string, err error) {
	level := slog.LevelWarn
	switch {
	case errors.Is(err, blobcache.ErrDiskFull):
		level = slog.LevelInfo
	case t.bg.Err() != nil:
		level = slog.LevelDebug
	}
	t.log.Log(context.Background(), level, msg, "table", t.name, "file", f.Key, "err", err)
}

// copyChunk is how much of a copy is read from the composite and written
// at a time.
const copyChunk = 1 << 20

// buildCopy writes the copy of f's rewrite (keyed key, size bytes) and its
// sum, from the composite.
func (t *Table) buildCopy(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile, key string, size int64) {
	start := time.Now()
	dataKey, sumKey := copyKeys(key)
	c, err := t.openComposite(ctx, snap, f)
	if err != nil {
		t.copyNotBuilt(f, err)
		return
	}
	defer c.Close()
	if c.Size() != size {
		t.log.Warn("deltafs: materialized copy not built: the rewrite's size changed", "table", t.name, "file", f.Key, "size", c.Size(), "want", size)
		return
	}
	var sum uint32
	built := false
	df, err := t.cache.Derived(ctx, dataKey, func(w io.Writer) error {
		built = true
		h := crc32.New(castagnoli)
		_, err := io.CopyBuffer(io.MultiWriter(w, h), io.NewSectionReader(ctxReaderAt{ctx, c}, 0, size), make([]byte, copyChunk))
		sum = h.Sum32()
		return err
	})
	if err != nil {
		t.copyNotBuilt(f, err)
		return
	}
	defer df.Close()
	if !built {
		// Another process's copy, found at the build: check it instead.
		t.checkCopyFile(ctx, snap, f, key, df, size)
		return
	}
	sf, err := t.cache.Derived(ctx, sumKey, func(w io.Writer) error {
		_, err := w.Write(copySum(size, sum))
		return err
	})
	if err != nil {
		df.Discard() // a copy without a sum could never be checked
		t.copyNotKept(f, "deltafs: materialized copy not kept: its sum could not be written", err)
		return
	}
	sf.Close()
	if id, ok := df.Identity(); ok {
		t.copies.trust(dataKey, id)
	}
	t.log.Debug("deltafs: materialized copy built", "table", t.name, "file", f.Key, "bytes", size, "took", time.Since(start).Round(time.Millisecond))
}

// checkCopyFile checks df, the copy of f's rewrite keyed key, against its
// sum and says whether it is good: trusted from then on, or discarded as a
// damaged cache file.
func (t *Table) checkCopyFile(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile, key string, df *blobcache.DiskFile, size int64) bool {
	dataKey, _ := copyKeys(key)
	err := func() error {
		id, ok := df.Identity()
		if !ok {
			return fmt.Errorf("cannot stat it")
		}
		if df.Size() != size {
			return fmt.Errorf("%d bytes, its sum gives %d", df.Size(), size)
		}
		wantSize, wantCRC, err := t.readCopySum(key)
		if err != nil {
			return err
		}
		h := crc32.New(castagnoli)
		if _, err := io.Copy(h, io.NewSectionReader(ctxReaderAt{ctx, &copyContent{df: df}}, 0, size)); err != nil {
			return fmt.Errorf("read it: %w", err)
		}
		if wantSize != size || h.Sum32() != wantCRC {
			return fmt.Errorf("its bytes are not the ones its sum records")
		}
		t.copies.trust(dataKey, id)
		return nil
	}()
	if err != nil {
		if ctx.Err() != nil {
			return false // stopped: checked again at a later open
		}
		t.damaged(snap, f, df.Path(), err.Error())
		df.Discard()
		return false
	}
	return true
}

// copySumLen is the size of a copy's sum entry: magic, size, CRC-32C.
const copySumLen = 16

func copySum(size int64, crc uint32) []byte {
	b := make([]byte, copySumLen)
	copy(b, "dfc1")
	binary.LittleEndian.PutUint64(b[4:], uint64(size))
	binary.LittleEndian.PutUint32(b[12:], crc)
	return b
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
