package blobcache

import (
	"context"
	"io"
)

// noteRead records a read of n > 0 bytes at off and, when it continues the
// previous read (same or next block), starts read-ahead. Read-ahead keeps
// up to ReadAhead blocks fetched beyond the reader and is refilled in chunks
// of at least ReadAhead/2 blocks, each one ranged read, so that a sequential
// reader costs few fetches and rarely waits.
func (o *Object) noteRead(off, n int64) {
	ra := int64(o.c.opts.ReadAhead)
	if ra == 0 {
		return
	}
	bs := o.c.opts.BlockSize
	first, last := off/bs, (off+n-1)/bs
	lastBlock := (o.id.size - 1) / bs

	o.mu.Lock()
	defer o.mu.Unlock()
	sequential := o.lastBlock >= 0 && (first == o.lastBlock || first == o.lastBlock+1)
	o.lastBlock = last
	if !sequential || o.raEnd < last {
		o.raEnd = last
	}
	if !sequential || o.raEnd-last > ra/2 || o.raEnd >= lastBlock {
		return
	}
	if !o.c.tryAcquire() {
		return // busy: try again on the next read
	}
	to := min(last+ra, lastBlock)
	o.startFill(o.raEnd+1, to)
	o.raEnd = to
}

// Prefetch starts loading the blocks covering [off, off+length) (clamped to
// the object) into memory in the background, for example a Parquet footer
// when a file is opened, and returns without waiting for the data. It waits
// for a background slot only until ctx is done; the fetch itself runs on the
// cache's context. Errors are not reported: a later ReadAt fetches again.
func (o *Object) Prefetch(ctx context.Context, off, length int64) {
	off = max(off, 0)
	end := o.id.size
	if length < end-off { // written so that a huge length cannot overflow
		end = off + max(length, 0)
	}
	if end <= off {
		return
	}
	bs := o.c.opts.BlockSize
	if o.c.acquire(ctx) {
		o.startFill(off/bs, (end-1)/bs)
	}
}

// startFill claims the blocks from..to that are neither in memory nor being
// fetched and fetches them in the background, with the slot the caller
// acquired. Claiming before returning means a reader that arrives next
// waits for these fetches instead of issuing its own.
func (o *Object) startFill(from, to int64) {
	runs, _ := o.c.blocks.claim(o.id, from, to, nil)
	if !o.c.start(func(ctx context.Context) { o.fetchRuns(ctx, runs) }) {
		for _, r := range runs {
			o.c.blocks.fail(o.id, r.first, r.calls, errAbandoned)
		}
	}
}

// fetchRuns fetches claimed runs as background work: failures leave
// nothing behind, and waiters of failed blocks fetch them themselves.
func (o *Object) fetchRuns(ctx context.Context, runs []run) {
	for i, r := range runs {
		if ctx.Err() != nil {
			for _, r := range runs[i:] {
				o.c.blocks.fail(o.id, r.first, r.calls, errAbandoned)
			}
			return
		}
		_ = o.fetchRun(ctx, r, nil, true)
	}
}

// ReaderAt returns an io.ReaderAt over the object whose reads use ctx, for
// format code that takes an io.ReaderAt and a size.
func (o *Object) ReaderAt(ctx context.Context) io.ReaderAt {
	return readerAt{ctx: ctx, o: o}
}

type readerAt struct {
	ctx context.Context
	o   *Object
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	return r.o.ReadAt(r.ctx, p, off)
}
