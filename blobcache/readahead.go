package blobcache

import (
	"context"
	"io"
)

// maxFetchBytes bounds one read-ahead GET: a batch of read-ahead is split
// into up to four GETs of at most this size, fetched in parallel, so that
// the store's time to first byte is paid once per batch, not per GET.
const maxFetchBytes = 8 << 20

// noteRead records a read of n > 0 bytes at off and drives read-ahead for
// sequential readers, as the kernel does for files: a read near the
// previous one (or at the start of the object) starts a stream whose first
// batch is ReadAhead blocks beyond the reader; when the reader reaches the
// first block of the last batch, the next one is requested, twice as large,
// up to MaxReadAhead/2 blocks. So one batch is in flight while the reader
// consumes the previous one, and at most about MaxReadAhead blocks are
// ahead of the reader. A read far from the previous one ends the stream.
func (o *Object) noteRead(off, n int64) {
	if o.c.opts.ReadAhead == 0 {
		return
	}
	bs := o.c.opts.BlockSize
	first, last := off/bs, (off+n-1)/bs

	o.mu.Lock()
	defer o.mu.Unlock()
	// READs of one stream can arrive slightly out of order (FUSE serves
	// several at once), so "near" tolerates a block or two either way.
	if first < o.lastBlock-2 || first > o.lastBlock+2 {
		o.lastBlock, o.raNext, o.raBatch = last, -1, 0
		return
	}
	o.lastBlock = max(o.lastBlock, last)
	if o.raNext < 0 { // a stream starts: request its first batch now
		o.raMarker = o.lastBlock
	}
	o.raNext = max(o.raNext, o.lastBlock+1)
	if o.lastBlock >= o.raMarker && o.raNext*bs < o.id.size {
		o.requestBatchLocked()
	}
}

// requestBatchLocked requests the next batch of a sequential stream,
// split into parallel GETs, as far as background slots allow. A batch cut
// short by busy slots keeps its size and is completed on the next read.
func (o *Object) requestBatchLocked() {
	ra, maxRA := int64(o.c.opts.ReadAhead), int64(o.c.opts.MaxReadAhead)
	bs := o.c.opts.BlockSize
	size := min(max(2*o.raBatch, ra), max(maxRA/2, ra))
	from, to := o.raNext, min(o.raNext+size-1, (o.id.size-1)/bs)
	chunk := max(1, min(size/4, maxFetchBytes/bs))
	for b := from; b <= to; b += chunk {
		if !o.c.tryAcquire() {
			o.raNext = b // retried on the next read
			return
		}
		o.startFill(b, min(b+chunk-1, to))
	}
	o.raBatch, o.raNext, o.raMarker = size, to+1, from
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
