package blobcache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/deltafs/deltafs/internal/durable"
)

// Derived returns the derived file for key, building it with build if it is
// not on disk. key is opaque (the caller encodes what the file derives
// from); its hash names the file, so files survive restarts. Concurrent
// callers for one key share one build; if the building caller's ctx is
// cancelled, a waiting caller builds instead. build writes the whole file
// to w; a build that fails leaves no file and its error is returned (to the
// callers that waited for it too). The file under its final name is always
// complete: it is written to a temporary file, fsynced and renamed.
//
// The caller must Close the returned file; open files are never evicted.
func (c *Cache) Derived(ctx context.Context, key string, build func(w io.Writer) error) (*DiskFile, error) {
	return c.derived(ctx, key, build, false)
}

// DerivedChecked is Derived for files that are cheaper to check than to
// flush: the build costs no fsync, and the cache appends a CRC-32C of what
// build wrote (a trailer the DiskFile does not show: Size and reads cover
// build's bytes only). A file this process did not build, or whose inode,
// size or ctime changed since this process last checked it (a crash
// before the kernel flushed it, an edit, a truncate, a replacement), is
// checked against its CRC when opened; one that fails is discarded and
// built again, and counted in Stats.DiskDamaged. key must not also be
// used with Derived.
func (c *Cache) DerivedChecked(ctx context.Context, key string, build func(w io.Writer) error) (*DiskFile, error) {
	return c.derived(ctx, key, build, true)
}

// derived implements Derived and DerivedChecked.
func (c *Cache) derived(ctx context.Context, key string, build func(w io.Writer) error, checked bool) (*DiskFile, error) {
	d := c.disk
	if d == nil {
		return nil, ErrNoDiskDir
	}
	if build == nil {
		return nil, fmt.Errorf("blobcache: derived %q: nil build function", key)
	}
	name := fileName(key)
	damaged := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("blobcache: derived %q: %w", key, err)
		}
		e, bc, leader := d.lookup(name)
		if e != nil {
			f, err := d.open(e, key, true, checked)
			if errors.Is(err, fs.ErrNotExist) {
				// Deleted behind the cache's back (rm of the file or the
				// cache dir): forget it and build it again.
				d.forget(e)
				continue
			}
			if err == nil && checked {
				if err = d.verify(f); err != nil {
					d.stats.diskDamaged.Add(1)
					c.log.Warn("deltafs: cache file damaged or changed on disk; building it again", "file", f.Path(), "err", err)
					f.Discard()
					f.Close()
					if damaged++; damaged > 1 {
						return nil, fmt.Errorf("blobcache: derived %q: %w", key, err)
					}
					continue
				}
			}
			return f, err
		}
		if leader {
			e, err := d.build(ctx, name, bc, build, checked)
			if err != nil {
				return nil, fmt.Errorf("blobcache: build derived %q: %w", key, err)
			}
			return d.open(e, key, false, checked)
		}
		select {
		case <-bc.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("blobcache: derived %q: %w", key, ctx.Err())
		}
		if bc.err != nil && !errors.Is(bc.err, errAbandoned) {
			return nil, fmt.Errorf("blobcache: build derived %q: %w", key, bc.err)
		}
	}
}

// lookup returns the entry of name with a reference taken, or else the
// build in progress, or else a new build that the caller leads.
func (d *diskCache) lookup(name string) (e *diskEntry, bc *buildCall, leader bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.entries[name]; e != nil {
		if e.refs++; e.elem != nil {
			d.lru.Remove(e.elem) // open: not a candidate for eviction
			e.elem = nil
		}
		return e, nil, false
	}
	if bc := d.builds[name]; bc != nil {
		return nil, bc, false
	}
	bc = &buildCall{done: make(chan struct{})}
	d.builds[name] = bc
	return nil, bc, true
}

// build runs fn into the file name and indexes it with one reference taken
// for the caller. Waiters are released however build ends (even by a
// panic in fn); they retry if ctx was cancelled.
func (d *diskCache) build(ctx context.Context, name string, bc *buildCall, fn func(io.Writer) error, checked bool) (*diskEntry, error) {
	d.stats.builds.Add(1)
	var e *diskEntry
	shared := errAbandoned // what waiters see unless the build ends normally
	ch := &charge{d: d}
	defer func() {
		d.mu.Lock()
		d.building -= ch.n // the entry's bytes are used now
		delete(d.builds, name)
		var victims []*diskEntry
		if e != nil {
			d.addLocked(e)
			victims = d.evictLocked()
		}
		d.mu.Unlock()
		bc.err = shared
		close(bc.done)
		d.unlink(victims)
	}()
	size, id, err := d.write(ctx, name, fn, checked, ch)
	switch {
	case err == nil:
		e = &diskEntry{name: name, size: size, refs: 1, verified: id}
		shared = nil
	case ctx.Err() == nil:
		shared = err
	}
	return e, err
}

// write builds the file name through a temporary file and returns its size
// on disk. A checked file gets its CRC trailer and no fsync, and its
// identity is returned (what this process wrote needs no check); any
// other is on disk before its rename. On error nothing is left behind.
func (d *diskCache) write(ctx context.Context, name string, fn func(io.Writer) error, checked bool, ch *charge) (int64, fileIdentity, error) {
	var none fileIdentity
	f, err := os.CreateTemp(d.dir, tmpPrefix+name+"-*")
	if errors.Is(err, fs.ErrNotExist) {
		// The cache dir was removed while in use: make it again.
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return 0, none, err
		}
		f, err = os.CreateTemp(d.dir, tmpPrefix+name+"-*")
	}
	if err != nil {
		return 0, none, err
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	var sum hash.Hash32
	var w io.Writer = bw
	if checked {
		sum = crc32.New(castagnoli)
		w = io.MultiWriter(bw, sum)
	}
	cw := &ctxWriter{ctx: ctx, w: w, charge: ch}
	if err := fn(cw); err != nil {
		return 0, none, err
	}
	size := cw.n
	if checked {
		if err := ch.cover(size + checkTrailerLen); err != nil {
			return 0, none, err
		}
		if _, err := bw.Write(checkTrailer(sum.Sum32())); err != nil {
			return 0, none, err
		}
		size += checkTrailerLen
	}
	if err := bw.Flush(); err != nil {
		return 0, none, err
	}
	if !checked {
		if err := f.Sync(); err != nil {
			return 0, none, err
		}
	}
	d.waitRemoved(name) // an eviction's pending unlink of name would delete the new file
	if err := os.Rename(tmp, d.path(name)); err != nil {
		return 0, none, err
	}
	done = true
	id := none
	if checked {
		// Taken from the open file after the rename, which changes the
		// ctime: the next open finds the same identity and trusts it. A
		// file without one is checked at its next open.
		if fi, err := f.Stat(); err == nil {
			id, _ = identityOf(fi)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(d.path(name))
		return 0, none, err
	}
	if !checked {
		_ = durable.SyncDir(d.dir) // best effort: the rename survives a power loss
	}
	return size, id, nil
}

// open opens the file of e, on which the caller holds a reference that the
// returned DiskFile now owns. touch records the use in the file's mtime, so
// that recency survives a restart.
func (d *diskCache) open(e *diskEntry, key string, touch, checked bool) (*DiskFile, error) {
	p := d.path(e.name)
	f, err := os.Open(p)
	if err != nil {
		d.release(e)
		return nil, fmt.Errorf("blobcache: open derived %q: %w", key, err)
	}
	if touch {
		// Record the use at most once a minute: a touch changes the
		// file's ctime, so a checked file is checked again after it.
		if fi, err := f.Stat(); err == nil && time.Since(fi.ModTime()) > touchEvery {
			now := time.Now()
			_ = os.Chtimes(p, now, now)
		}
	}
	size := e.size
	if checked {
		size = max(e.size-checkTrailerLen, 0)
	}
	return &DiskFile{d: d, e: e, f: f, size: size}, nil
}

// touchEvery is how stale a file's mtime gets before an open records the
// use in it.
const touchEvery = time.Minute

// forget drops e from the index, for a file found gone from the disk.
func (d *diskCache) forget(e *diskEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entries[e.name] != e { // open's failure already dropped the caller's reference
		return
	}
	d.dropLocked(e)
}

// ctxWriter fails writes once ctx is done, so a build stops when its
// caller goes away, counts the bytes written and charges them to the disk
// limit before writing them.
type ctxWriter struct {
	ctx    context.Context
	w      io.Writer
	n      int64
	charge *charge
}

func (w *ctxWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if err := w.charge.cover(w.n + int64(len(p))); err != nil {
		return 0, err
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// charge is what one build has charged to the disk limit (diskCache.grow).
// The build gives it back when it ends, and its file's bytes are then the
// entry's.
type charge struct {
	d *diskCache
	n int64 // the build's own; given back under diskCache.mu when it ends
}

// chargeStep is how far ahead a build charges the limit: a lock per MiB
// written, not per write.
const chargeStep = 1 << 20

// cover makes the charge at least total bytes.
func (c *charge) cover(total int64) error {
	if total <= c.n {
		return nil
	}
	need := total - c.n
	n, err := c.d.grow(need, max(chargeStep-need, 0))
	c.n += n
	return err
}

// Discard removes the file from the cache, for a file found torn or corrupt:
// it is deleted now (open DiskFiles of it stay readable until closed) and the
// next Derived for its key builds it again. Close must still be called.
func (f *DiskFile) Discard() {
	d := f.d
	d.mu.Lock()
	if d.entries[f.e.name] != f.e || d.removing[f.e.name] != nil {
		d.mu.Unlock()
		return // already discarded
	}
	d.dropLocked(f.e)
	ch := make(chan struct{})
	d.removing[f.e.name] = ch
	d.mu.Unlock()
	_ = removeFile(d.path(f.e.name))
	d.mu.Lock()
	close(ch)
	delete(d.removing, f.e.name)
	d.mu.Unlock()
}
