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
	"sync"

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
	// verified holds the cache keys whose entry this process built or
	// checked against its CRC: entries are written without fsync.
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
		deleted, err := snap.DeletedRows(ctx, f.Add)
		if err != nil {
			return err
		}
		src, release, err := m.data.readerAtFor(ctx, t, f)
		if err != nil {
			return err
		}
		defer release()
		plan, err := pqfile.NewPlan(src, f.Add.Size, deleted, rename)
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
			m.verified.Store(key, true)
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
			m.log.Warn("deltafs: rebuilding a torn cache entry", "err", err)
		}
	}
}

// openEntry reads the layout of a cache entry for a stored file of srcSize
// bytes and, the first time this process sees an entry it did not build,
// checks its CRC.
func (m *materializer) openEntry(key string, df *blobcache.DiskFile, srcSize int64) (*pqfile.Layout, error) {
	l, crc, err := readEntry(df, df.Size(), srcSize)
	if err != nil {
		return nil, err
	}
	if _, ok := m.verified.Load(key); !ok {
		if err := checkEntry(df, df.Size(), crc); err != nil {
			return nil, err
		}
		m.verified.Store(key, true)
	}
	return l, nil
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
