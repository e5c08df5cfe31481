package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

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

// openRewritten returns the rewritten bytes of f.
func (t *Table) openRewritten(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (Content, error) {
	l, df, err := t.derive(ctx, snap, f)
	if err != nil {
		return nil, err
	}
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
func (t *Table) derive(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (*pqfile.Layout, *blobcache.DiskFile, error) {
	rename, mapping, err := renameFor(snap)
	if err != nil {
		return nil, nil, err
	}
	shape, err := t.shape(snap)
	if err != nil {
		return nil, nil, err
	}
	fs, err := shape.forFile(f)
	if err != nil {
		return nil, nil, err
	}
	key := strings.Join([]string{"deltafs-composite/v3", t.store.String(), f.Key,
		strconv.FormatInt(f.Add.Size, 10), objectVersion(f.Add), f.Add.DeletionVector.UniqueID(), mapping, shape.sum}, "|")
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
func (t *Table) entry(ctx context.Context, key string, srcSize int64, build func(io.Writer) error) (*pqfile.Layout, *blobcache.DiskFile, error) {
	df, err := t.cache.DerivedChecked(ctx, key, build)
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
