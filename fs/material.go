package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/pqfile"
	"github.com/deltafs/deltafs/nodes"
)

// materializer serves live files rewritten with pqfile (deleted rows
// removed, physical column names replaced by logical ones) as composites:
// the ranges they share with the stored file are read from it, and only the
// rest (re-encoded row groups and the new footer) goes to the disk cache,
// keyed by what the bytes derive from: the table, the file (path, size,
// modification time), the deletion vector id and the column mapping.
type materializer struct {
	tables *tableIndex
	data   *dataSource
	cache  *blobcache.Cache
	log    *slog.Logger
	stats  *metrics
	// verified maps a cache key to the identity (inode, size, ctime) its
	// entry had when this process last checked it against its CRC: every
	// open compares the entry on disk with it and checks again if it
	// changed (overwritten, truncated, replaced), so a damaged entry is
	// rebuilt, not served. Entries are written without fsync.
	verified sync.Map
}

var _ nodes.Materializer = (*materializer)(nil)

// Size implements nodes.Materializer.
func (m *materializer) Size(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (int64, error) {
	l, df, err := m.derive(ctx, snap, f)
	if err != nil {
		return 0, err
	}
	df.Close()
	return l.Size(), nil
}

// Open implements nodes.Materializer.
func (m *materializer) Open(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (nodes.Content, error) {
	l, df, err := m.derive(ctx, snap, f)
	if err != nil {
		return nil, err
	}
	src, err := m.data.Open(ctx, snap, f)
	if err == nil && src.Size() != f.Add.Size {
		src.Close()
		err = fmt.Errorf("data file %s: %w: stored size %d, the log says %d", f.Key, delta.ErrCorruptLog, src.Size(), f.Add.Size)
	}
	if err != nil {
		df.Close()
		return nil, err
	}
	return &compositeContent{layout: l, src: src, entry: df}, nil
}

// derive returns the layout of the rewritten file and its open cache entry,
// building the entry once. An entry this process did not build is checked
// against its CRC first; a torn one is discarded and built again.
func (m *materializer) derive(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (*pqfile.Layout, *blobcache.DiskFile, error) {
	t, err := m.tables.of(snap)
	if err != nil {
		return nil, nil, err
	}
	rename, mapping, err := renameFor(snap)
	if err != nil {
		return nil, nil, err
	}
	key := strings.Join([]string{"deltafs-composite/v1", t.store.String(), f.Key,
		strconv.FormatInt(f.Add.Size, 10), objectVersion(f.Add), f.Add.DeletionVector.UniqueID(), mapping}, "|")
	build := m.progress(t.name, snap, f, func(w io.Writer) error {
		src, release, err := m.data.readerAtFor(ctx, t, f)
		if err != nil {
			return err
		}
		defer release()
		plan, err := planFor(ctx, snap, f, rename, src)
		if err != nil {
			return err
		}
		return writeEntry(w, plan)
	})
	l, df, err := m.entry(ctx, key, f.Add.Size, build)
	if err != nil {
		return nil, nil, fmt.Errorf("materialize %s: %w", f.Key, err)
	}
	return l, df, nil
}

// entry returns the layout and the open cache entry of key, for a stored
// file of srcSize bytes, building it with build if needed. An entry this
// process did not build is checked against its CRC first; a torn one is
// discarded and built again (once).
func (m *materializer) entry(ctx context.Context, key string, srcSize int64, build func(io.Writer) error) (*pqfile.Layout, *blobcache.DiskFile, error) {
	built := func(w io.Writer) error {
		err := build(w)
		if err == nil {
			m.verified.Store(key, builtHere)
		}
		return err
	}
	for attempt := 0; ; attempt++ {
		df, err := m.cache.DerivedUnsynced(ctx, key, built)
		if err != nil {
			return nil, nil, err
		}
		l, err := m.openEntry(key, df, srcSize)
		if err == nil {
			return l, df, nil
		}
		if errors.Is(err, errTornEntry) {
			df.Discard()
		}
		df.Close()
		if attempt > 0 || !errors.Is(err, errTornEntry) {
			return nil, nil, err
		}
		if m.log != nil {
			m.log.Warn("deltafs: cache entry damaged or changed on disk; rebuilding it", "entry", df.Path(), "err", err)
		}
	}
}

// openEntry reads the layout of a cache entry for a stored file of srcSize
// bytes and checks its CRC unless the file on disk is the one this process
// built or last checked (same inode, size and ctime). A file whose size
// is not what the cache indexed (truncated, extended) is torn.
func (m *materializer) openEntry(key string, df *blobcache.DiskFile, srcSize int64) (*pqfile.Layout, error) {
	fi, err := df.Stat()
	if err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", df.Path(), err)
	}
	if fi.Size() != df.Size() {
		return nil, fmt.Errorf("%w: %d bytes on disk, %d written", errTornEntry, fi.Size(), df.Size())
	}
	l, crc, err := readEntry(df, df.Size(), srcSize)
	if err != nil {
		return nil, err
	}
	id, known := identityOf(fi)
	was, ok := m.verified.Load(key)
	switch {
	case ok && known && was == builtHere:
		m.verified.Store(key, id) // the first open after the build: this file
	case ok && known && was == id:
	default:
		if err := checkEntry(df, df.Size(), crc); err != nil {
			return nil, err
		}
		if known {
			m.verified.Store(key, id)
		}
	}
	return l, nil
}

// fileIdentity tells whether a cache entry on disk changed: a write,
// truncate or replacement changes the ctime or the inode, and no user can
// set a ctime back.
type fileIdentity struct {
	ino, size int64
	ctime     syscall.Timespec
}

// builtHere marks an entry this process just built (its identity is
// recorded at its first open).
var builtHere = fileIdentity{ino: -1}

// identityOf returns fi's identity; false when the platform gives none
// (the entry is then checked on every open).
func identityOf(fi os.FileInfo) (fileIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}, false
	}
	return fileIdentity{ino: int64(st.Ino), size: fi.Size(), ctime: statCtime(st)}, true
}

// renameFor returns the footer rename from physical to logical names of a
// column-mapped snapshot (nil otherwise) and a fingerprint of it for the
// cache key.
func renameFor(snap *delta.Snapshot) (*pqfile.Rename, string, error) {
	md := snap.Metadata()
	mode := md.ColumnMapping()
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
