package serve

// Rewritten files: a DV'd or column-mapped file's plan, its layout and
// patch in the disk cache, and the footer-only patches kept in memory.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

// A rewritten file (deleted rows removed, physical column names replaced
// by logical ones, with pqfile) is served as a composite: the ranges it
// shares with the stored file are read from it, and only the rest
// (re-encoded row groups and the new footer) goes to the disk cache,
// keyed by what the bytes derive from: the table, the file (path, size,
// modification time), the deletion vector id and the column mapping.

// A rewrite that needs no data decoded (no row deleted, no value
// converted: new names, the snapshot's columns, partition constants) is
// laid out from the footer alone, in memory: its patch is the new footer
// and a few bytes per made-up column chunk, cheaper to compute again than
// to write to disk and check. Those patches are kept in memory, in a
// byte-bounded LRU shared by the mount's tables (Caches; the keys name
// the store); every other patch goes to the disk cache.

// openRewritten returns the rewritten bytes of f: its materialized copy
// when there is a good one (copies.go), else the composite.
func (t *Table) openRewritten(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (Content, error) {
	k, err := t.rewriteKey(snap, f)
	if err != nil {
		return nil, err
	}
	c, refused := t.copyOnDisk(ctx, snap, f, k.key)
	if c != nil {
		return c, nil
	}
	l, df, err := t.deriveWith(ctx, snap, f, k)
	if err != nil {
		return nil, err
	}
	if refused != nil && refused.size != l.Size() {
		if err := t.unsay(snap, f, refused, l.Size()); err != nil {
			df.Close()
			return nil, err
		}
	}
	t.countOpen(snap, f, k.key, l.Size())
	return t.composite(ctx, f, l, df)
}

// unsay corrects the size of f that the sum of a damaged copy gave (r),
// which is not its rewrite's (size). When a stat may have served it (the
// verdict is that size), the open fails with a CacheFileError, never
// serving other bytes than stat said, and the next stat has the right size.
func (t *Table) unsay(snap *delta.Snapshot, f *delta.LiveFile, r *copyRefusal, size int64) error {
	vk, err := t.verdictKey(snap, f)
	if err != nil {
		return err
	}
	if n, ok := t.verdicts.get(vk); !ok || n != r.size {
		return nil
	}
	t.decide(snap, f, vk, size)
	return &CacheFileError{Path: r.path, Table: t.name, Version: snap.Version(), File: f.Key,
		Reason: fmt.Sprintf("its sum gave a size of %d bytes, which a stat may have reported; the rewrite has %d (stat again)", r.size, size)}
}

// openComposite returns the rewritten bytes of f as a composite.
func (t *Table) openComposite(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (Content, error) {
	l, df, err := t.derive(ctx, snap, f)
	if err != nil {
		return nil, err
	}
	return t.composite(ctx, f, l, df)
}

// composite serves layout l of f from the stored file and the patch df,
// which it owns.
func (t *Table) composite(ctx context.Context, f *delta.LiveFile, l *pqfile.Layout, df patchReader) (Content, error) {
	src, err := t.openStored(ctx, f)
	if err != nil {
		df.Close()
		return nil, err
	}
	return &compositeContent{layout: l, src: src, entry: df}, nil
}

// derive returns the layout of the rewritten file and its open cache entry,
// building the entry once (the disk cache checks an entry this process did
// not build before handing it out).
func (t *Table) derive(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (*pqfile.Layout, patchReader, error) {
	l, p, _, err := t.deriveKeyed(ctx, snap, f)
	return l, p, err
}

// deriveKeyed is derive, also returning the rewrite's key: what its bytes
// derive from.
func (t *Table) deriveKeyed(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (*pqfile.Layout, patchReader, string, error) {
	k, err := t.rewriteKey(snap, f)
	if err != nil {
		return nil, nil, "", err
	}
	l, p, err := t.deriveWith(ctx, snap, f, k)
	return l, p, k.key, err
}

// rewriteOf is what a rewrite of a file derives from, and its key.
type rewriteOf struct {
	key    string
	rename *pqfile.Rename
	fs     *pqfile.Shape
}

// rewriteKey returns what f's rewrite in snap derives from, reading
// nothing but the snapshot.
func (t *Table) rewriteKey(snap *delta.Snapshot, f *delta.LiveFile) (rewriteOf, error) {
	rename, mapping, err := renameFor(snap)
	if err != nil {
		return rewriteOf{}, err
	}
	shape, err := t.shape(snap)
	if err != nil {
		return rewriteOf{}, err
	}
	fs, err := shape.forFile(f)
	if err != nil {
		return rewriteOf{}, err
	}
	key := strings.Join([]string{"deltafs-composite/v3", t.store.String(), f.Key,
		strconv.FormatInt(f.Add.Size, 10), objectVersion(f.Add), f.Add.DeletionVector.UniqueID(), mapping, shape.sum}, "|")
	if shape.hasParts() {
		// Since the footer splice (pqfile/splice.go) a file with partition
		// columns is served with other bytes than older releases' copies of it.
		key += "|spliced"
	}
	return rewriteOf{key: key, rename: rename, fs: fs}, nil
}

// deriveWith is derive for the rewrite k.
func (t *Table) deriveWith(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile, k rewriteOf) (*pqfile.Layout, patchReader, error) {
	key, rename, fs := k.key, k.rename, k.fs
	if f.Add.DeletionVector == nil {
		if l, p, ok, err := t.footerRewrite(ctx, snap, f, key, rename, fs); ok || err != nil {
			return l, p, err
		}
	}
	build := t.progress(snap, f, func(w io.Writer) error {
		src, err := t.openStored(ctx, f)
		if err != nil {
			return err
		}
		defer src.Close()
		plan, err := planFor(ctx, snap, f, rename, fs, ctxReaderAt{ctx, src})
		if err != nil {
			return err
		}
		return pqfile.WriteEntry(w, plan)
	})
	l, df, err := t.entry(ctx, key, f.Add.Size, build)
	if err != nil {
		return nil, nil, fmt.Errorf("materialize %s: %w", f.Key, err)
	}
	return l, df, nil
}

// entry returns the layout and the open cache entry of key, for a stored
// file of srcSize bytes, building it with build if needed. An entry that
// passes the cache's check but is not one writeEntry wrote (a format this
// version does not know) is discarded, and the error returned.
func (t *Table) entry(ctx context.Context, key string, srcSize int64, build func(io.Writer) error) (*pqfile.Layout, patchReader, error) {
	df, err := t.cache.DerivedChecked(ctx, key, build)
	if errors.Is(err, blobcache.ErrDiskFull) {
		return t.uncachedEntry(srcSize, build, err)
	}
	if err != nil {
		return nil, nil, err
	}
	l, err := pqfile.ReadEntry(df, df.Size(), srcSize)
	if err != nil {
		if errors.Is(err, pqfile.ErrBadEntry) {
			df.Discard()
		}
		df.Close()
		return nil, nil, fmt.Errorf("cache entry %s: %w", df.Path(), err)
	}
	return l, df, nil
}

// renameFor returns the footer rename from physical to logical names of a
// column-mapped snapshot (nil otherwise) and a fingerprint of it for the
// cache key.
func renameFor(snap *delta.Snapshot) (*pqfile.Rename, string, error) {
	md := snap.Metadata()
	mode := snap.ColumnMapping()
	if mode == "" || mode == delta.ColumnMappingNone {
		return nil, "", nil
	}
	schema, err := snap.Schema()
	if err != nil {
		return nil, "", err
	}
	nm := delta.NewNameMap(schema, mode)
	sum := sha256.Sum256([]byte(string(mode) + "\n" + md.SchemaString))
	r := &pqfile.Rename{Name: func(p []string) (string, bool) {
		lp, ok := nm.LogicalPath(p)
		if !ok || len(lp) == 0 {
			return "", false
		}
		last := lp[len(lp)-1]
		return last, last != p[len(p)-1]
	}}
	return r, hex.EncodeToString(sum[:12]), nil
}

// patchReader holds the patch of a composite: a disk cache entry, or
// bytes in memory.
type patchReader interface {
	io.ReaderAt
	Close() error
}

// memPatch is a patch kept in memory.
type memPatch struct{ *bytes.Reader }

func (memPatch) Close() error { return nil }

// memEntry is a footer-only rewrite kept in memory.
type memEntry struct {
	layout *pqfile.Layout
	patch  []byte
}

// footerRewrite returns the layout and patch of f from memory, or lays
// them out from f's footer when nothing needs decoding; ok is false when
// the rewrite needs data decoded (the caller uses the disk cache).
func (t *Table) footerRewrite(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile, key string, rename *pqfile.Rename, shape *pqfile.Shape) (*pqfile.Layout, patchReader, bool, error) {
	if e, ok := t.mem.get(key); ok {
		return e.layout, memPatch{bytes.NewReader(e.patch)}, true, nil
	}
	// A local file is read with pread alone; a remote one through the
	// block cache, which keeps its end for the reader that follows.
	var src io.ReaderAt
	if t.root != nil {
		r, done, err := t.footerSource(ctx, f)
		if err != nil {
			return nil, nil, false, err
		}
		defer done()
		src = r
	} else {
		c, err := t.openStored(ctx, f)
		if err != nil {
			return nil, nil, false, err
		}
		defer c.Close()
		src = ctxReaderAt{ctx, c}
	}
	plan, err := planFor(ctx, snap, f, rename, shape, src)
	if err != nil {
		return nil, nil, false, fmt.Errorf("materialize %s: %w", f.Key, err)
	}
	if plan.NeedsDecoding() {
		return nil, nil, false, nil
	}
	var buf bytes.Buffer
	l, err := plan.WriteLayout(&buf)
	if err != nil {
		return nil, nil, false, fmt.Errorf("materialize %s: %w", f.Key, err)
	}
	t.mem.add(key, memEntry{layout: l, patch: buf.Bytes()})
	return l, memPatch{bytes.NewReader(buf.Bytes())}, true, nil
}

// memPatches is a byte-bounded LRU of footer-only rewrites.
type memPatches struct {
	mu    sync.Mutex
	lru   *lru.Cache[string, memEntry] // guarded by mu
	bytes int64                        // guarded by mu: patch bytes held
	limit int64
}

// memPatchBytes bounds the patches the mount keeps in memory, for all
// its tables: about 64,000 footers of small files.
const memPatchBytes = 64 << 20

func newMemPatches(limit int64) *memPatches {
	m := &memPatches{limit: limit}
	m.lru, _ = lru.NewWithEvict(1<<20, func(k string, e memEntry) { m.bytes -= entryBytes(k, e) })
	return m
}

// entryBytes is what a patch kept costs: its bytes, 64 per segment of its
// layout, its key and 128 bytes of structs and LRU links.
func entryBytes(key string, e memEntry) int64 {
	return int64(len(e.patch)) + 64*int64(len(e.layout.Segments())) + int64(len(key)) + 128
}

// clear drops every patch (Caches.Close).
func (m *memPatches) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lru.Purge()
}

// usage returns the patch bytes held and the patches kept.
func (m *memPatches) usage() (int64, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes, m.lru.Len()
}

func (m *memPatches) get(key string) (memEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lru.Get(key)
}

func (m *memPatches) add(key string, e memEntry) {
	n := entryBytes(key, e)
	if n > m.limit/16 {
		return // a large footer is rebuilt when needed, not kept
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lru.Contains(key) {
		return
	}
	m.lru.Add(key, e)
	m.bytes += n
	for m.bytes > m.limit && m.lru.Len() > 0 {
		m.lru.RemoveOldest()
	}
}
