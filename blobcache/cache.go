// Package blobcache caches bytes of immutable objects for the mount.
//
// It has two parts. A memory block cache serves ranged reads of objects
// (Parquet data files) from block-aligned fetches held in an LRU bounded by
// bytes; concurrent misses of one block share one fetch, and sequential
// readers get read-ahead in the background. A bounded disk cache holds
// derived files (for example a data file rewritten to apply a deletion
// vector), built once per key and kept across restarts.
//
// The package knows nothing of Delta or FUSE: objects are immutable and
// identified by (key, size, version), where version is an ETag or any string
// that changes when the bytes could.
//
// Lock order: Object.mu before Cache.bgMu and blockTable.mu. blockTable.mu and diskCache.mu
// are leaves: nothing else is locked while holding them, and neither is ever
// held across a Source read or a build.
package blobcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// Source reads byte ranges of immutable objects. length < 0 means to the end
// of the object. delta.Storage satisfies it. Implementations must be safe for
// concurrent use.
type Source interface {
	ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
}

// Errors reported by the package; returned errors wrap them.
var (
	// ErrInvalidOptions reports an Options value New cannot use.
	ErrInvalidOptions = errors.New("blobcache: invalid options")
	// ErrShortRead reports a Source that returned fewer bytes than the
	// object's size says it has.
	ErrShortRead = errors.New("blobcache: short read from source")
	// ErrNoDiskDir reports a Derived call on a cache without a DiskDir.
	ErrNoDiskDir = errors.New("blobcache: no disk directory configured")
)

// Defaults used for zero Options fields.
const (
	DefaultBlockSize   = 1 << 20
	DefaultMemoryBytes = 256 << 20
	DefaultDiskBytes   = 10 << 30
	DefaultReadAhead   = 8
	// DefaultMaxReadAhead is the widest read-ahead window, in blocks, that
	// a long sequential read grows to (64 MiB of 1 MiB blocks): enough to
	// keep a few large GETs in flight against a store's time to first byte.
	DefaultMaxReadAhead = 64
)

// maxBackground bounds the background fetches (read-ahead, Prefetch) in
// flight across the whole cache: a few readers, each with a few GETs.
const maxBackground = 16

// Options configure a Cache. Zero fields take the defaults above.
type Options struct {
	// BlockSize is the unit of fetching and caching; a power of two.
	BlockSize int64
	// MemoryBytes bounds the bytes of blocks held in memory.
	MemoryBytes int64
	// DiskDir holds derived files; "" disables Derived.
	DiskDir string
	// DiskBytes bounds the bytes on disk: derived files (open or not,
	// and those being built) and what Reserve handed out, together. A
	// build that would pass it fails with ErrDiskFull.
	DiskBytes int64
	// Headroom is the part of DiskBytes that derived files never take,
	// kept for Reserve: however many derived files readers hold open,
	// a Reserve of up to Headroom bytes (less what is already reserved)
	// fits. Zero: derived files may take all of DiskBytes.
	Headroom int64
	// ReadAhead is how many blocks to fetch ahead of a reader that starts
	// reading sequentially; negative disables read-ahead. It is capped to
	// the blocks MemoryBytes holds.
	ReadAhead int
	// MaxReadAhead is the widest window, in blocks, that read-ahead grows
	// to while a reader stays sequential (it doubles from ReadAhead). It is
	// at least ReadAhead and at most a quarter of the blocks MemoryBytes
	// holds, so that a few sequential readers do not evict each other's
	// blocks before reading them.
	MaxReadAhead int
	// Logger receives a warning for each derived file found damaged on
	// disk (default: discard).
	Logger *slog.Logger
}

func (o *Options) normalize() error {
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.MemoryBytes == 0 {
		o.MemoryBytes = DefaultMemoryBytes
	}
	if o.DiskBytes == 0 {
		o.DiskBytes = DefaultDiskBytes
	}
	if o.ReadAhead == 0 {
		o.ReadAhead = DefaultReadAhead
	}
	switch {
	case o.BlockSize < 0 || o.BlockSize&(o.BlockSize-1) != 0:
		return fmt.Errorf("%w: block size %d is not a power of two", ErrInvalidOptions, o.BlockSize)
	case o.MemoryBytes < 0:
		return fmt.Errorf("%w: memory bytes %d < 0", ErrInvalidOptions, o.MemoryBytes)
	case o.DiskBytes < 0:
		return fmt.Errorf("%w: disk bytes %d < 0", ErrInvalidOptions, o.DiskBytes)
	case o.Headroom < 0 || o.Headroom > o.DiskBytes:
		return fmt.Errorf("%w: headroom %d not within the disk bytes %d", ErrInvalidOptions, o.Headroom, o.DiskBytes)
	}
	// Read-ahead beyond what memory holds would evict itself.
	memBlocks := o.MemoryBytes / o.BlockSize
	o.ReadAhead = int(min(int64(max(o.ReadAhead, 0)), memBlocks))
	if o.MaxReadAhead == 0 {
		o.MaxReadAhead = DefaultMaxReadAhead
	}
	o.MaxReadAhead = int(max(min(int64(o.MaxReadAhead), memBlocks/4), int64(o.ReadAhead)))
	return nil
}

// Cache is a memory block cache over any number of Sources plus an optional
// disk cache of derived files. It is safe for concurrent use. Close stops its
// background work; reads and Derived keep working after Close, without
// read-ahead.
type Cache struct {
	opts   Options
	log    *slog.Logger
	blocks *blockTable
	disk   *diskCache // nil without DiskDir
	stats  counters

	ctx    context.Context // owns background work; cancelled by Close
	cancel context.CancelFunc
	sem    chan struct{} // one token per background fetch in flight

	bgMu   sync.Mutex
	closed bool           // guarded by bgMu
	wg     sync.WaitGroup // Add only under bgMu with closed false
}

// New returns a Cache configured by opts. With a DiskDir it creates the
// directory if needed, deletes temporary files left by a crash, and accounts
// (and if needed evicts) the derived files already there.
func New(opts Options) (*Cache, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	c := &Cache{opts: opts, log: opts.Logger, sem: make(chan struct{}, maxBackground)}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if c.blocks, err = newBlockTable(opts.MemoryBytes, &c.stats); err != nil {
		return nil, err
	}
	if opts.DiskDir != "" {
		if c.disk, err = openDiskCache(opts.DiskDir, opts.DiskBytes, opts.Headroom, &c.stats); err != nil {
			return nil, err
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Close cancels background fetches and waits for them to return. It is
// idempotent. Open DiskFiles stay valid.
func (c *Cache) Close() error {
	c.bgMu.Lock()
	c.closed = true
	c.bgMu.Unlock()
	c.cancel()
	c.wg.Wait()
	return nil
}

// Object returns a handle on the immutable object key of src, size bytes
// long, at version. Blocks are shared between handles with the same
// (key, size, version), so key must name the object uniquely across all
// Sources used with this Cache (for example a full URL). Handles are cheap;
// sequential-read detection is per handle, so use one per open file.
func (c *Cache) Object(src Source, key string, size int64, version string) *Object {
	return &Object{
		c:         c,
		src:       src,
		id:        objectID{key: key, size: max(size, 0), version: version},
		lastBlock: -1,
		raNext:    -1,
	}
}

// tryAcquire takes a background slot if one is free and reports whether
// it did; the caller must then call start.
func (c *Cache) tryAcquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// acquire takes a background slot when one frees up before ctx or the
// cache is done, and reports whether it did; the caller must then call start.
func (c *Cache) acquire(ctx context.Context) bool {
	select {
	case c.sem <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-c.ctx.Done():
	}
	return false
}

// start runs f on the cache's context in a goroutine that Close waits for,
// releasing the slot taken by acquire when f returns. After Close it
// releases the slot and returns false without running f.
func (c *Cache) start(f func(ctx context.Context)) bool {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.closed {
		<-c.sem
		return false
	}
	c.wg.Go(func() {
		defer func() { <-c.sem }()
		f(c.ctx)
	})
	return true
}
