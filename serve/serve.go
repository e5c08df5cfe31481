// Package serve produces the bytes a mount serves for a table's data
// files: a stored file as it is (a local file, which the kernel can pass
// through, or a remote object read through the block cache), and a file
// that needs rewriting (rows deleted by a deletion vector removed,
// physical column names replaced by logical ones) as a composite of
// ranges of the stored file and of a patch kept in the disk cache
// (pqfile's layout entry).
//
// It knows Delta through the engine's value types, bytes through
// delta.Storage, caches through blobcache and Parquet through pqfile;
// nothing of FUSE. Package nodes asks it for sizes and contents; the
// mount builds one Table per table it serves.
package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
	"golang.org/x/sys/unix"
)

// Content is an open, immutable view of the bytes one data file serves.
// ReadAt must be safe for concurrent use; it returns io.EOF (or n <
// len(p) with io.EOF) at the end.
type Content interface {
	// ReadAt reads len(p) bytes at off.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	// Size is the exact number of bytes served.
	Size() int64
	// File returns a local file holding exactly the served bytes, usable
	// for kernel passthrough, or nil when there is none. It stays valid
	// until Close.
	File() *os.File
	// Close releases the view.
	Close() error
}

// Rewritten reports whether a live file is known to be served rewritten
// without reading it: it has a deletion vector, or its table's columns
// carry physical names (column mapping: mapped). Any other file is
// rewritten only when its columns differ from its snapshot's schema
// (shape.go), which its footer tells.
func Rewritten(add *delta.Add, mapped bool) bool {
	return mapped || add.DeletionVector != nil
}

// IsRewritten reports whether c is a rewritten file's content (a
// composite of stored ranges and a patch), not the stored bytes.
func IsRewritten(c Content) bool {
	_, ok := c.(*compositeContent)
	return ok
}

// Mapped reports whether the data files of the snapshot carry physical
// column names (column mapping in id or name mode, and honoured by its
// protocol: delta.ColumnMappingFor).
func Mapped(snap *delta.Snapshot) bool {
	mode := snap.ColumnMapping()
	return mode != "" && mode != delta.ColumnMappingNone
}

// Options are a Table's settings.
type Options struct {
	// Logger receives materializations: debug lines, info lines for
	// those that take longer than 2s (with progress), warnings for
	// failures (default: discard).
	Logger *slog.Logger
	// Observe, when set, is told of every materialization (metrics).
	Observe func(took time.Duration, bytes int64, err error)
	// PartitionsInFiles serves the partition columns in every data file,
	// as constant columns with the file's partition values.
	PartitionsInFiles bool
	// Verdicts, when set, keeps the verdicts of stored files across mounts
	// (the mount's, shared by its tables).
	Verdicts *VerdictJournal
	// Caches are the mount's, shared by its tables and closed by the mount
	// after them. Nil: the Table's own, freed by its Close.
	Caches *Caches
}

// Table serves the data files of one table. It is safe for concurrent
// use.
type Table struct {
	name  string           // the table's name in the mount, for messages
	store delta.Storage    // the table's storage, unwrapped (data files are not timed)
	local string           // the table's local directory; "" for an object store
	root  *localRoot       // the local directory, held open; nil for an object store
	cache *blobcache.Cache // block cache of remote objects, disk cache of patches
	log   *slog.Logger
	opts  Options
	// caches are the mount's (Options.Caches), or the Table's own when
	// ownCaches; mem, verdicts and copies are parts of them.
	caches    *Caches
	ownCaches bool
	mem       *memPatches // footer-only rewrites
	// verdicts remembers how stored files are served, so that a file
	// listed in many versions has its footer read once.
	verdicts  *verdictCache
	copies    *copyState
	storeName string        // store.String(), for the verdicts' keys
	warmSem   chan struct{} // a token per footer reader of Warm

	warmMu     sync.Mutex
	warmCancel context.CancelFunc // guarded by warmMu: a local table's current warm-up

	// bg is the context of the table's background work (warm-ups,
	// materialized copies), cancelled by Close, which waits for bgWG.
	bg     context.Context
	stopBg context.CancelFunc
	bgWG   sync.WaitGroup
}

// NewTable returns the server of the data files of the table named name
// kept in store; cache holds remote blocks and rewritten files' patches.
func NewTable(name string, store delta.Storage, cache *blobcache.Cache, opts Options) *Table {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	caches, own := opts.Caches, opts.Caches == nil
	if own {
		caches = NewCaches()
	}
	t := &Table{name: name, store: store, local: delta.LocalDir(store), cache: cache, log: log, opts: opts,
		caches: caches, ownCaches: own, mem: caches.patches, verdicts: caches.verdicts, copies: caches.copies,
		warmSem: make(chan struct{}, warmWorkers)}
	if store != nil {
		t.storeName = store.String()
	}
	if t.local != "" {
		t.root = &localRoot{dir: t.local}
		t.warmSem = make(chan struct{}, max(localWarmWorkers, 1))
	}
	t.bg, t.stopBg = context.WithCancel(context.Background())
	return t
}

// Close stops the table's background work (warm-ups, copies being built
// or checked) and waits for it, so that nothing writes to the cache once
// the mount closes it. Reads already served are unaffected; Close is for
// the end of the mount. Caches of its own (Options.Caches nil) are freed.
func (t *Table) Close() {
	t.stopBg()
	t.bgWG.Wait()
	if t.ownCaches {
		t.caches.Close()
	}
}

// background runs fn on a goroutine Close waits for, with a context
// Close cancels, bounded by timeout.
func (t *Table) background(timeout time.Duration, fn func(ctx context.Context)) {
	t.bgWG.Add(1)
	go func() {
		defer t.bgWG.Done()
		ctx, cancel := context.WithTimeout(t.bg, timeout)
		defer cancel()
		fn(ctx)
	}()
}

// Size returns the exact number of bytes f, a live file of snap, is
// served with: its stored size, or its rewritten size (building the
// rewrite's cache entry once, or read from the sum of its materialized
// copy). The answer is remembered with the verdict.
func (t *Table) Size(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (int64, error) {
	vk, err := t.verdictKey(snap, f)
	if err != nil {
		return 0, err
	}
	if n, ok := t.verdicts.get(vk); ok && n != sizeUnknown {
		if n == servedAsStored {
			return f.Add.Size, nil
		}
		return n, nil
	}
	if n, ok := t.journaled(snap, f, vk); ok {
		if n == servedAsStored {
			return f.Add.Size, nil
		}
		return n, nil
	}
	rw, err := t.rewritten(ctx, snap, f, nil)
	if err != nil || !rw {
		return f.Add.Size, err
	}
	k, err := t.rewriteKey(snap, f)
	if err != nil {
		return 0, err
	}
	n, ok, err := t.splicedSize(ctx, f, k)
	if err == nil && ok {
		t.decide(snap, f, vk, n)
		return n, nil
	}
	if n, ok := t.sumSize(snap, f, k.key); ok { // an earlier mount's copy: its patch need not be read
		t.decide(snap, f, vk, n)
		return n, nil
	}
	if err != nil {
		return 0, err
	}
	l, df, err := t.deriveWith(ctx, snap, f, k)
	if err != nil {
		return 0, err
	}
	df.Close()
	t.decide(snap, f, vk, l.Size())
	return l.Size(), nil
}

// splicedSize returns the size of f, a local file whose rewrite k only
// adds constant columns (partition values), from its footer alone: the
// splice's size, without laying the rewrite out or keeping it (a
// listing's warm-up sizes every file of a snapshot, and few are then
// opened; footerRewrite lays one out at its open, spliced the same way).
// ok is false when this does not apply or the splice does not take the
// file. A footer read costs less than looking for a materialized copy.
func (t *Table) splicedSize(ctx context.Context, f *delta.LiveFile, k rewriteOf) (int64, bool, error) {
	if t.root == nil || f.Add.DeletionVector != nil || k.rename != nil {
		return 0, false, nil
	}
	if e, ok := t.mem.get(k.key); ok {
		return e.layout.Size(), true, nil
	}
	src, done, err := t.footerSource(ctx, f)
	if err != nil {
		return 0, false, err
	}
	defer done()
	n, ok := pqfile.SplicedSize(src, f.Add.Size, k.fs)
	return n, ok, nil
}

// decide remembers the verdict n of f (servedAsStored or its served
// size): in memory, and in the journal when the mount keeps one.
func (t *Table) decide(snap *delta.Snapshot, f *delta.LiveFile, vk verdictID, n int64) {
	t.verdicts.put(vk, n)
	if t.opts.Verdicts == nil {
		return
	}
	if k, ok := t.stableKey(snap, f); ok {
		t.opts.Verdicts.put(k, n)
	}
}

// journaled returns f's verdict from the journal (an earlier mount's),
// remembering it in memory.
func (t *Table) journaled(snap *delta.Snapshot, f *delta.LiveFile, vk verdictID) (int64, bool) {
	if t.opts.Verdicts == nil || !t.opts.Verdicts.inherited {
		return 0, false
	}
	k, ok := t.stableKey(snap, f)
	if !ok {
		return 0, false
	}
	n, ok := t.opts.Verdicts.get(k)
	if !ok || n == sizeUnknown {
		return 0, false
	}
	t.verdicts.put(vk, n)
	return n, true
}

// stableKey is f's verdict key in the journal.
func (t *Table) stableKey(snap *delta.Snapshot, f *delta.LiveFile) (stableVerdict, bool) {
	shape, err := t.shape(snap)
	if err != nil {
		return stableVerdict{}, false
	}
	return stableVerdictKey(t.storeName, f.Key, f.Add, shape, string(snap.ColumnMapping())), true
}

// KnownSize returns the size the stored file of a is served with in snap
// when it is decided already (a listing's warm-up, an earlier version),
// without making its LiveFile: a stat's fast way.
func (t *Table) KnownSize(snap *delta.Snapshot, a *delta.Add) (int64, bool) {
	shape, err := t.shape(snap)
	if err != nil {
		return 0, false
	}
	key, err := snap.DataKey(a)
	if err != nil {
		return 0, false
	}
	n, ok := t.verdicts.get(addVerdictKey(t.storeName, key, a, shape, string(snap.ColumnMapping())))
	switch {
	case !ok || n == sizeUnknown:
		return 0, false
	case n == servedAsStored:
		return a.Size, true
	}
	return n, true
}

// verdictKey returns the key of f's verdict in snap.
func (t *Table) verdictKey(snap *delta.Snapshot, f *delta.LiveFile) (verdictID, error) {
	shape, err := t.shape(snap)
	if err != nil {
		return verdictID{}, err
	}
	return verdictKey(t.storeName, f, shape, string(snap.ColumnMapping())), nil
}

// Open returns the served bytes of f, a live file of snap. A missing
// object is an error wrapping delta.ErrNotExist; a stored file whose
// size is not the one the log gives is an error wrapping
// delta.ErrCorruptLog, never wrong data.
func (t *Table) Open(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (Content, error) {
	if Rewritten(f.Add, Mapped(snap)) {
		return t.openRewritten(ctx, snap, f)
	}
	c, err := t.openStored(ctx, f)
	if err != nil {
		return nil, err
	}
	rw, err := t.rewritten(ctx, snap, f, c)
	if err != nil || rw {
		c.Close()
		if err != nil {
			return nil, err
		}
		return t.openRewritten(ctx, snap, f)
	}
	return c, nil
}

// rewritten reports whether f is served rewritten: known from the log
// (Rewritten), or because its columns are not its snapshot's (read from
// its footer, through c when it is open already).
func (t *Table) rewritten(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile, c Content) (bool, error) {
	if Rewritten(f.Add, Mapped(snap)) {
		return true, nil
	}
	shape, err := t.shape(snap)
	if err != nil {
		return false, err
	}
	if shape.hasParts() {
		return true, nil
	}
	vk := verdictKey(t.storeName, f, shape, string(snap.ColumnMapping()))
	if n, ok := t.verdicts.get(vk); ok {
		return n != servedAsStored, nil
	}
	if n, ok := t.journaled(snap, f, vk); ok {
		return n != servedAsStored, nil
	}
	fs, err := shape.forFile(f)
	if err != nil {
		return false, err
	}
	var src io.ReaderAt
	if c != nil {
		src = ctxReaderAt{ctx, c}
	} else {
		r, done, err := t.footerSource(ctx, f)
		if err != nil {
			return false, err
		}
		defer done()
		src = r
	}
	rw, err := pqfile.ShapeNeeded(src, f.Add.Size, fs, t.caches.schemas.Load())
	if err != nil {
		return false, fmt.Errorf("data file %s: %w", f.Key, err)
	}
	if rw {
		t.verdicts.put(vk, sizeUnknown)
	} else {
		t.decide(snap, f, vk, servedAsStored)
	}
	return rw, nil
}

// footerSource returns a reader of the stored bytes of f for what reads
// only its footer (a shape verdict, a footer-only rewrite), and its
// release: a local file opened, read with pread and closed, with nothing
// else between them; for an object store, ranged GETs of the object past
// the block cache (a stat must not fetch whole blocks of every file it
// lists).
func (t *Table) footerSource(ctx context.Context, f *delta.LiveFile) (io.ReaderAt, func(), error) {
	if t.root == nil {
		return delta.NewReaderAt(ctx, t.store, f.Key), func() {}, nil
	}
	fd, size, err := t.root.openFD(f.Key)
	if err != nil {
		return nil, nil, err
	}
	if size != f.Add.Size {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("data file %s: %w: stored size %d, the log says %d", f.Key, delta.ErrCorruptLog, size, f.Add.Size)
	}
	return fdReader(fd), func() { unix.Close(fd) }, nil
}

// shape returns the shape snap's files are served in.
func (t *Table) shape(snap *delta.Snapshot) (*snapShape, error) {
	return t.caches.shapes.cachedShape(snap, t.opts.PartitionsInFiles)
}
