package blobcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Object reads one immutable object through the cache. It is safe for
// concurrent use.
type Object struct {
	c   *Cache
	src Source
	id  objectID

	// Read-ahead state of the sequential stream, if any (see noteRead).
	mu        sync.Mutex
	lastBlock int64 // guarded by mu: furthest block of the stream's reads, -1 before any
	raNext    int64 // guarded by mu: first block read-ahead has not requested, -1 without a stream
	raMarker  int64 // guarded by mu: reading this block requests the next batch
	raBatch   int64 // guarded by mu: blocks in the last batch requested, 0 before any
}

// Size returns the object's size in bytes.
func (o *Object) Size() int64 { return o.id.size }

// ReadAt reads len(p) bytes at off, like io.ReaderAt with a context. It
// returns fewer bytes only at the end of the object, with io.EOF (also for
// off at or past the size, like os.File). The bytes are the object's bytes:
// a failed or short fetch is never cached and its error names the key and
// range.
func (o *Object) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	bufs, err := o.Slices(ctx, off, len(p))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	n := 0
	for _, b := range bufs {
		n += copy(p[n:], b)
	}
	return n, err
}

// Slices returns the n bytes at off as slices of the cached blocks, in
// order, with the same fetching, errors and end-of-object behaviour as
// ReadAt (fewer bytes with io.EOF only at the end). It copies nothing: the
// slices are shared with the cache and with other readers and must not be
// modified. They stay valid, with the same bytes, for as long as the
// caller holds them, even after the cache evicts their blocks.
func (o *Object) Slices(ctx context.Context, off int64, n int) ([][]byte, error) {
	if off < 0 {
		return nil, fmt.Errorf("blobcache: read %s at %d: negative offset", o.id.key, off)
	}
	if off >= o.id.size {
		if n <= 0 {
			return nil, nil
		}
		return nil, io.EOF
	}
	m := min(int64(max(n, 0)), o.id.size-off)
	if m == 0 {
		return nil, nil
	}
	bs := o.c.opts.BlockSize
	first, last := off/bs, (off+m-1)/bs
	blocks, err := o.getBlocks(ctx, first, last)
	if err != nil {
		return nil, err
	}
	// Read-ahead starts once the reader has its own blocks, so that its
	// GETs never compete with the fetch the reader waits for (the time to
	// first byte of a fresh open).
	o.noteRead(off, m)
	// Trim the last block to the end of the range, then the first to its
	// start (in this order, both offsets are from the block's start).
	tail := len(blocks) - 1
	blocks[tail] = blocks[tail][:off+m-last*bs]
	blocks[0] = blocks[0][off-first*bs:]
	if m < int64(n) {
		return blocks, io.EOF
	}
	return blocks, nil
}

// getBlocks returns blocks first..last, from memory, by fetching the ones
// nobody is fetching (consecutive ones in one read), and by waiting for the
// others. A fetch abandoned by its leader is retried here.
func (o *Object) getBlocks(ctx context.Context, first, last int64) ([][]byte, error) {
	got := make([][]byte, last-first+1)
	for {
		runs, waits := o.c.blocks.claim(o.id, first, last, got)
		// Fetch our runs before waiting for others: a goroutine never
		// waits while holding claims, so claims cannot deadlock.
		var ferr error
		for _, r := range runs {
			if ferr != nil {
				o.c.blocks.fail(o.id, r.first, r.calls, errAbandoned)
				continue
			}
			ferr = o.fetchRun(ctx, r, got[r.first-first:], false)
		}
		if ferr != nil {
			return nil, ferr
		}
		for i, cl := range waits {
			select {
			case <-cl.done:
			case <-ctx.Done():
				return nil, o.rangeErr(i, i, ctx.Err())
			}
			switch {
			case errors.Is(cl.err, errAbandoned):
			case cl.err != nil:
				return nil, cl.err
			default:
				got[i-first] = cl.data
			}
		}
		if complete(got) {
			return got, nil
		}
	}
}

func complete(blocks [][]byte) bool {
	for _, b := range blocks {
		if b == nil {
			return false
		}
	}
	return true
}

// blockEnd returns the end offset of block i (the object's size for the last).
func (o *Object) blockEnd(i int64) int64 {
	return min((i+1)*o.c.opts.BlockSize, o.id.size)
}

// rangeErr wraps err with the key and the byte range of blocks first..last.
func (o *Object) rangeErr(first, last int64, err error) error {
	return fmt.Errorf("blobcache: read %s [%d,%d): %w",
		o.id.key, first*o.c.opts.BlockSize, o.blockEnd(last), err)
}

// fetchRun reads the blocks of r with one ranged read, publishing each
// block as soon as it is complete; got[i] receives block r.first+i. On
// error the blocks not yet published are failed: abandoned (waiters retry)
// if this was background work or ctx was cancelled, else with the error.
func (o *Object) fetchRun(ctx context.Context, r run, got [][]byte, background bool) error {
	start, end := r.first*o.c.opts.BlockSize, o.blockEnd(r.last)
	o.c.stats.fetches.Add(1)
	if background {
		o.c.stats.readAheadFetches.Add(1)
	}
	rc, err := o.src.ReadRange(ctx, o.id.key, start, end-start)
	i := int64(0)
	if err == nil {
		defer rc.Close()
		for ; r.first+i <= r.last; i++ {
			if err = o.readBlock(rc, r, i, got); err != nil {
				break
			}
		}
	}
	if err == nil {
		return nil
	}
	err = o.rangeErr(r.first+i, r.last, err)
	shared := err
	if background || ctx.Err() != nil {
		shared = errAbandoned
	}
	o.c.blocks.fail(o.id, r.first+i, r.calls[i:], shared)
	return err
}

// readBlock reads block r.first+i from rc and publishes it.
func (o *Object) readBlock(rc io.Reader, r run, i int64, got [][]byte) error {
	b := r.first + i
	buf := make([]byte, o.blockEnd(b)-b*o.c.opts.BlockSize)
	n, err := io.ReadFull(rc, buf)
	o.c.stats.bytesFetched.Add(int64(n))
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: got %d of %d bytes of block %d", ErrShortRead, n, len(buf), b)
	}
	if err != nil {
		return err
	}
	o.c.blocks.complete(blockKey{o.id, b}, r.calls[i], buf)
	if got != nil {
		got[i] = buf
	}
	return nil
}
