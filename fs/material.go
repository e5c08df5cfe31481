package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/pqfile"
	"github.com/deltafs/deltafs/nodes"
)

// materializer rewrites live files with pqfile (deleted rows removed,
// physical column names replaced by logical ones) into the disk cache,
// keyed by what the bytes derive from: the table, the file (path, size,
// modification time), the deletion vector id and the column mapping.
type materializer struct {
	tables *tableIndex
	data   *dataSource
	cache  *blobcache.Cache
}

var _ nodes.Materializer = (*materializer)(nil)

// Size implements nodes.Materializer.
func (m *materializer) Size(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (int64, error) {
	df, err := m.derive(ctx, snap, f)
	if err != nil {
		return 0, err
	}
	defer df.Close()
	return df.Size(), nil
}

// Open implements nodes.Materializer.
func (m *materializer) Open(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (nodes.Content, error) {
	df, err := m.derive(ctx, snap, f)
	if err != nil {
		return nil, err
	}
	return &diskContent{df: df}, nil
}

// derive returns the rewritten file from the disk cache, building it once.
func (m *materializer) derive(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (*blobcache.DiskFile, error) {
	t, err := m.tables.of(snap)
	if err != nil {
		return nil, err
	}
	rename, mapping, err := renameFor(snap)
	if err != nil {
		return nil, err
	}
	key := strings.Join([]string{"deltafs-materialized/v1", t.store.String(), f.Key,
		strconv.FormatInt(f.Add.Size, 10), objectVersion(f.Add), f.Add.DeletionVector.UniqueID(), mapping}, "|")
	df, err := m.cache.Derived(ctx, key, func(w io.Writer) error {
		deleted, err := snap.DeletedRows(ctx, f.Add)
		if err != nil {
			return err
		}
		src, release, err := m.data.readerAtFor(ctx, t, f)
		if err != nil {
			return err
		}
		defer release()
		_, err = pqfile.Rewrite(src, f.Add.Size, deleted, rename, w)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("materialize %s: %w", f.Key, err)
	}
	return df, nil
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

// diskContent is a rewritten file in the disk cache. Its local file is
// opened for kernel passthrough only when asked for.
type diskContent struct {
	df   *blobcache.DiskFile
	once sync.Once
	f    *os.File // opened by File; nil if never asked or it failed
}

func (c *diskContent) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return c.df.ReadAt(p, off)
}
func (c *diskContent) Size() int64 { return c.df.Size() }

func (c *diskContent) File() *os.File {
	c.once.Do(func() {
		if f, err := os.Open(c.df.Path()); err == nil {
			c.f = f
		}
	})
	return c.f
}

func (c *diskContent) Close() error {
	if c.f != nil {
		c.f.Close()
	}
	return c.df.Close()
}
