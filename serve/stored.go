package serve

// Stored files: a local file for kernel passthrough, or a remote object
// through the memory block cache.

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
)

// openStored opens the stored bytes of f: a local table's file straight
// from the local file (the kernel page cache is its cache, and the file
// can be handed to kernel passthrough); a remote table's through the
// memory block cache. A local file whose size is not the one the log
// gives is an error wrapping delta.ErrCorruptLog (it was changed behind
// the log: serving it would be wrong data).
func (t *Table) openStored(ctx context.Context, f *delta.LiveFile) (Content, error) {
	if t.root != nil {
		c, err := t.root.open(f.Key)
		if err != nil {
			return nil, err
		}
		if c.size != f.Add.Size {
			c.Close()
			return nil, fmt.Errorf("data file %s: %w: stored size %d, the log says %d", f.Key, delta.ErrCorruptLog, c.size, f.Add.Size)
		}
		return c, nil
	}
	obj := t.cache.Object(cacheSource{t}, t.objectKey(f.Key), f.Add.Size, objectVersion(f.Add))
	// Every Parquet reader starts at the footer: fetch the file's tail in
	// the background now, so that it is on its way (or in memory) when the
	// first read asks for it. A sequential reader from offset 0 gets its
	// own fetch at once, in parallel.
	obj.Prefetch(ctx, f.Add.Size-footerPrefetch, footerPrefetch)
	return &objectContent{obj: obj}, nil
}

// footerPrefetch is how much of a remote data file's tail is fetched when
// it is opened: enough for the footers of most files (a block-aligned fetch
// of the last block covers more).
const footerPrefetch = 64 << 10

// objectKey names a data object uniquely across all the mount's stores:
// the block cache is shared by every table of the mount.
func (t *Table) objectKey(key string) string { return t.store.String() + "/" + key }

// cacheSource is the blobcache.Source of one table: blobcache hands back
// the cache name (objectKey), which it maps to the table's storage key.
type cacheSource struct{ t *Table }

func (s cacheSource) ReadRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	key, ok := strings.CutPrefix(name, s.t.store.String()+"/")
	if !ok {
		return nil, fmt.Errorf("block cache name %q is not an object of %s", name, s.t.store.String())
	}
	return s.t.store.ReadRange(ctx, key, off, length)
}

// objectVersion identifies the bytes of an add: the same path rewritten by
// a writer gets another modification time.
func objectVersion(a *delta.Add) string { return strconv.FormatInt(a.ModificationTime, 10) }

// fileContent is a local file served as is.
type fileContent struct {
	f    *os.File
	size int64
}

func (c *fileContent) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return c.f.ReadAt(p, off)
}
func (c *fileContent) Size() int64    { return c.size }
func (c *fileContent) File() *os.File { return c.f }
func (c *fileContent) Close() error   { return c.f.Close() }

// objectContent is a remote object read through the block cache.
type objectContent struct {
	obj *blobcache.Object
}

func (c *objectContent) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return c.obj.ReadAt(ctx, p, off)
}

// ReadSlices lends the cached blocks holding [off, off+n) without copying
// them (see blobcache.Object.Slices): the FUSE reply is written from them.
func (c *objectContent) ReadSlices(ctx context.Context, off int64, n int) ([][]byte, error) {
	return c.obj.Slices(ctx, off, n)
}

func (c *objectContent) Size() int64    { return c.obj.Size() }
func (c *objectContent) File() *os.File { return nil }
func (c *objectContent) Close() error   { return nil }
