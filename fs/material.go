package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/nodes"
	"github.com/deltafs/deltafs/pqfile"
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
// building the entry once (the disk cache checks an entry this process did
// not build before handing it out).
func (m *materializer) derive(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (*pqfile.Layout, *blobcache.DiskFile, error) {
	t, err := m.tables.of(snap)
	if err != nil {
		return nil, nil, err
	}
	rename, mapping, err := renameFor(snap)
	if err != nil {
		return nil, nil, err
	}
	key := strings.Join([]string{"deltafs-composite/v2", t.store.String(), f.Key,
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
		return pqfile.WriteEntry(w, plan)
	})
	l, df, err := m.entry(ctx, key, f.Add.Size, build)
	if err != nil {
		return nil, nil, fmt.Errorf("materialize %s: %w", f.Key, err)
	}
	return l, df, nil
}

// entry returns the layout and the open cache entry of key, for a stored
// file of srcSize bytes, building it with build if needed. An entry that
// passes the cache's check but is not one writeEntry wrote (a format this
// version does not know) is discarded, and the error returned.
func (m *materializer) entry(ctx context.Context, key string, srcSize int64, build func(io.Writer) error) (*pqfile.Layout, *blobcache.DiskFile, error) {
	df, err := m.cache.DerivedChecked(ctx, key, build)
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
