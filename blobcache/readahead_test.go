package blobcache

import (
	"context"
	"testing"
	"time"
)

// readSequentially reads the whole object in chunks of n bytes.
func readSequentially(t *testing.T, o *Object, data []byte, n int) {
	t.Helper()
	for off := int64(0); off < int64(len(data)); off += int64(n) {
		checkRead(t, o, data, off, n)
	}
}

func TestSequentialReadsTriggerReadAhead(t *testing.T) {
	const bs, blocks = 4096, 64
	cases := []struct {
		name       string
		readAhead  int
		chunk      int
		maxFetches int64
		minFetches int64
	}{
		{"off: one fetch per block", -1, bs, blocks, blocks},
		{"on: block-sized reads", 8, bs, blocks / 3, 2},
		{"on: kernel-sized reads", 8, bs / 4, blocks / 3, 2},
		{"on: reads spanning blocks", 8, 3*bs + 5, blocks / 3, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource()
			src.delay = 200 * time.Microsecond // a little latency, as a store has
			data := src.put("k", blocks*bs, 11)
			c := newCache(t, Options{BlockSize: bs, ReadAhead: tc.readAhead})
			o := c.Object(src, "k", int64(len(data)), "v")
			readSequentially(t, o, data, tc.chunk)
			c.Close() // wait for read-ahead in flight
			s := c.Stats()
			if s.Fetches < tc.minFetches || s.Fetches > tc.maxFetches {
				t.Fatalf("sequential read of %d blocks: %d fetches, want %d..%d (%+v)",
					blocks, s.Fetches, tc.minFetches, tc.maxFetches, s)
			}
			if tc.readAhead > 0 && s.ReadAheadFetches == 0 {
				t.Fatalf("no read-ahead fetches: %+v", s)
			}
			if s.BytesFetched != int64(len(data)) {
				t.Fatalf("fetched %d bytes of a %d-byte object read once", s.BytesFetched, len(data))
			}
		})
	}
}

func TestRandomReadsDoNotReadAhead(t *testing.T) {
	const bs = 4096
	src := newFakeSource()
	data := src.put("k", 64*bs, 12)
	c := newCache(t, Options{BlockSize: bs, ReadAhead: 8})
	o := c.Object(src, "k", int64(len(data)), "v")
	for _, b := range []int64{40, 3, 17, 60, 9, 30} {
		checkRead(t, o, data, b*bs+10, 100)
	}
	c.Close()
	if s := c.Stats(); s.ReadAheadFetches != 0 || s.Fetches != 6 {
		t.Fatalf("random reads: %+v; want 6 fetches and no read-ahead", s)
	}
}

func TestPrefetch(t *testing.T) {
	const bs = 4096
	src := newFakeSource()
	data := src.put("k", 10*bs+100, 13)
	c := newCache(t, Options{BlockSize: bs, ReadAhead: -1})
	o := c.Object(src, "k", int64(len(data)), "v")
	o.Prefetch(context.Background(), int64(len(data))-bs-50, 1<<20) // a footer: last 2 blocks
	o.Prefetch(context.Background(), -5, 0)                         // empty: nothing
	waitFor(t, "the prefetch", func() bool { return c.Stats().MemoryBytes == bs+100 })
	if s := c.Stats(); s.Fetches != 1 || s.ReadAheadFetches != 1 || s.MemoryBytes != bs+100 {
		t.Fatalf("after Prefetch: %+v; want one fetch of the last two blocks", s)
	}
	checkRead(t, o, data, int64(len(data))-200, 200)
	if s := c.Stats(); s.Fetches != 1 || s.Hits != 2 {
		t.Fatalf("read of the prefetched range: %+v; want 2 hits and no fetch", s)
	}
}

func TestCloseCancelsBackgroundWork(t *testing.T) {
	const bs = 4096
	src := newFakeSource()
	data := src.put("k", 8*bs, 14)
	never := make(chan struct{})
	src.hold = func(int64) <-chan struct{} { return never }
	src.started = make(chan int64, 10)
	c := newCache(t, Options{BlockSize: bs})
	o := c.Object(src, "k", int64(len(data)), "v")
	o.Prefetch(context.Background(), 0, int64(len(data)))
	<-src.started
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while a background fetch was blocked")
	}
	// Nothing was cached by the cancelled fetch, and reads still work.
	src.hold = nil
	if s := c.Stats(); s.MemoryBytes != 0 {
		t.Fatalf("cancelled prefetch left %d bytes", s.MemoryBytes)
	}
	readSequentially(t, o, data, bs)
}

func TestReadAheadGrowsIntoParallelFetches(t *testing.T) {
	const bs, blocks = 4096, 256
	src := newFakeSource()
	src.delay = 2 * time.Millisecond // a store's time to first byte
	data := src.put("k", blocks*bs, 15)
	c := newCache(t, Options{BlockSize: bs, ReadAhead: 8, MaxReadAhead: 64})
	o := c.Object(src, "k", int64(len(data)), "v")
	readSequentially(t, o, data, bs)
	c.Close()
	s := c.Stats()
	// Batches of 8, 16, 32, 32... blocks, each split into four GETs.
	if s.Fetches > 48 {
		t.Errorf("sequential read of %d blocks: %d fetches, want <= 48 (%+v)", blocks, s.Fetches, s)
	}
	if s.BytesFetched != int64(len(data)) {
		t.Errorf("fetched %d bytes of a %d-byte object read once", s.BytesFetched, len(data))
	}
	if got := src.maxLength.Load(); got < 8*bs {
		t.Errorf("longest fetch %d bytes, want >= %d: the window did not grow", got, 8*bs)
	}
	if got := src.maxInflight.Load(); got < 3 {
		t.Errorf("at most %d fetches in flight, want >= 3: batches are not split into parallel GETs", got)
	}
}

func TestReadAheadToleratesReorderedReads(t *testing.T) {
	const bs, blocks = 4096, 64
	src := newFakeSource()
	src.delay = 200 * time.Microsecond
	data := src.put("k", blocks*bs, 16)
	c := newCache(t, Options{BlockSize: bs, ReadAhead: 8})
	o := c.Object(src, "k", int64(len(data)), "v")
	// FUSE serves several READs at once: they can arrive swapped.
	checkRead(t, o, data, 0, bs)
	for b := int64(1); b+1 < blocks; b += 2 {
		checkRead(t, o, data, (b+1)*bs, bs)
		checkRead(t, o, data, b*bs, bs)
	}
	checkRead(t, o, data, (blocks-1)*bs, bs)
	c.Close()
	if s := c.Stats(); s.Fetches > blocks/3 || s.ReadAheadFetches == 0 {
		t.Fatalf("swapped sequential reads of %d blocks: %+v; want read-ahead and <= %d fetches", blocks, s, blocks/3)
	}
}

func TestMaxReadAheadBoundedByMemory(t *testing.T) {
	cases := []struct {
		name            string
		opts            Options
		wantRA, wantMax int
	}{
		{"defaults", Options{}, DefaultReadAhead, DefaultMaxReadAhead},
		{"a quarter of memory", Options{BlockSize: 4096, MemoryBytes: 64 * 4096, MaxReadAhead: 1000}, 8, 16},
		{"never below ReadAhead", Options{BlockSize: 4096, MemoryBytes: 16 * 4096, ReadAhead: 8}, 8, 8},
		{"read-ahead off", Options{ReadAhead: -1}, 0, DefaultMaxReadAhead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, tc.opts)
			if c.opts.ReadAhead != tc.wantRA || c.opts.MaxReadAhead != tc.wantMax {
				t.Fatalf("ReadAhead, MaxReadAhead = %d, %d; want %d, %d", c.opts.ReadAhead, c.opts.MaxReadAhead, tc.wantRA, tc.wantMax)
			}
		})
	}
}
