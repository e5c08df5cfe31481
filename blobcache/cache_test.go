package blobcache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob/memblob"
)

func TestNewRejectsBadOptions(t *testing.T) {
	for _, opts := range []Options{
		{BlockSize: 3},
		{BlockSize: -4096},
		{BlockSize: 1000},
		{MemoryBytes: -1},
		{DiskBytes: -1},
	} {
		if c, err := New(opts); !errors.Is(err, ErrInvalidOptions) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions", opts, err)
		}
	}
}

// checkRead reads [off, off+n) through o and compares with what os.File
// semantics give on data: the same bytes, io.EOF exactly when short.
func checkRead(t *testing.T, o *Object, data []byte, off int64, n int) {
	t.Helper()
	want := make([]byte, n)
	wn, werr := bytes.NewReader(data).ReadAt(want, off)
	if n == 0 {
		wn, werr = 0, nil // os.File semantics: an empty read never fails
	}
	got := make([]byte, n)
	gn, gerr := o.ReadAt(context.Background(), got, off)
	if gn != wn || gerr != werr || !bytes.Equal(got[:gn], want[:wn]) {
		t.Fatalf("ReadAt(len %d, off %d) of %d bytes = %d, %v; want %d, %v (bytes equal: %v)",
			n, off, len(data), gn, gerr, wn, werr, bytes.Equal(got[:min(gn, wn)], want[:min(gn, wn)]))
	}
}

func TestReadAtMatchesSource(t *testing.T) {
	cases := []struct {
		name            string
		blockSize, size int64
		memory          int64
		readAhead       int
	}{
		{"partial last block", 4096, 10*4096 + 123, 1 << 20, 8},
		{"exact blocks", 4096, 8 * 4096, 1 << 20, 8},
		{"smaller than a block", 4096, 100, 1 << 20, 8},
		{"one byte", 4096, 1, 1 << 20, 0},
		{"empty", 4096, 0, 1 << 20, 8},
		{"tiny memory evicts", 1024, 50*1024 + 7, 3 * 1024, 4},
		{"no read-ahead", 512, 20*512 + 511, 1 << 20, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource()
			data := src.put("obj", int(tc.size), uint64(tc.size))
			c := newCache(t, Options{BlockSize: tc.blockSize, MemoryBytes: tc.memory, ReadAhead: tc.readAhead})
			o := c.Object(src, "obj", tc.size, "v1")
			r := rand.New(rand.NewPCG(1, 2))
			// Edges first: the last partial block, exactly at and past EOF.
			checkRead(t, o, data, max(tc.size-1, 0), 10)
			checkRead(t, o, data, tc.size, 1)
			checkRead(t, o, data, tc.size+5000, 7)
			checkRead(t, o, data, 0, int(tc.size)+100)
			checkRead(t, o, data, 0, 0)
			var wg sync.WaitGroup
			for g := range 4 {
				seed := r.Uint64()
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 200 {
						off := r.Int64N(tc.size + tc.blockSize)
						checkRead(t, o, data, off, r.IntN(3*int(tc.blockSize)))
					}
				})
			}
			wg.Wait()
			if s := c.Stats(); s.MemoryBytes > tc.memory {
				t.Errorf("memory held %d > limit %d", s.MemoryBytes, tc.memory)
			}
		})
	}
}

func TestNegativeOffset(t *testing.T) {
	src := newFakeSource()
	src.put("k", 100, 1)
	o := newCache(t, Options{}).Object(src, "k", 100, "")
	if _, err := o.ReadAt(context.Background(), make([]byte, 1), -1); err == nil {
		t.Fatal("ReadAt at -1 succeeded")
	}
}

func TestSlicesLendCachedBlocks(t *testing.T) {
	const bs, size = 4096, 5*4096 + 300
	src := newFakeSource()
	data := src.put("k", size, 9)
	c := newCache(t, Options{BlockSize: bs, ReadAhead: -1})
	o := c.Object(src, "k", size, "v")
	cases := []struct {
		name       string
		off        int64
		n          int
		wantBlocks int
		wantEOF    bool
	}{
		{"inside one block", 10, 100, 1, false},
		{"one whole block", bs, bs, 1, false},
		{"across two blocks", bs - 5, 10, 2, false},
		{"across four blocks", 100, 3*bs + 1, 4, false},
		{"to the end, short", 4*bs + 7, 2 * bs, 2, true},
		{"at the end", size, 10, 0, true},
		{"past the end", size + 1, 10, 0, true},
		{"empty at the end", size, 0, 0, false},
		{"empty inside", 50, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bufs, err := o.Slices(context.Background(), tc.off, tc.n)
			if (err == io.EOF) != tc.wantEOF || (err != nil && err != io.EOF) {
				t.Fatalf("Slices(%d, %d) error %v, want EOF %v", tc.off, tc.n, err, tc.wantEOF)
			}
			if len(bufs) != tc.wantBlocks {
				t.Fatalf("Slices(%d, %d) returned %d slices, want %d", tc.off, tc.n, len(bufs), tc.wantBlocks)
			}
			want := data[min(tc.off, size):min(tc.off+int64(tc.n), size)]
			if got := bytes.Join(bufs, nil); !bytes.Equal(got, want) {
				t.Fatalf("Slices(%d, %d) = %d bytes, want %d bytes equal to the source", tc.off, tc.n, len(got), len(want))
			}
		})
	}
	// Everything read was kept: lending again fetches nothing.
	before := c.Stats().Fetches
	if _, err := o.Slices(context.Background(), 0, size); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Fetches != before {
		t.Fatalf("lending blocks already read fetched %d times, want 0", s.Fetches-before)
	}
}

func TestReaderAtAndGocloudSource(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	data := randomBytes(3*4096+17, 7)
	if err := b.WriteAll(ctx, "dir/part-0.parquet", data, nil); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, Options{BlockSize: 4096})
	o := c.Object(bucketSource{b}, "dir/part-0.parquet", int64(len(data)), "etag")
	got, err := io.ReadAll(io.NewSectionReader(o.ReaderAt(ctx), 0, o.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll through ReaderAt: %d bytes, %v; equal %v", len(got), err, bytes.Equal(got, data))
	}
}

func TestConcurrentMissesShareOneFetch(t *testing.T) {
	src := newFakeSource()
	data := src.put("k", 4096, 3)
	gate := make(chan struct{})
	src.hold = func(int64) <-chan struct{} { return gate }
	c := newCache(t, Options{BlockSize: 4096, ReadAhead: -1})
	o := c.Object(src, "k", 4096, "v")
	const readers = 16
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() { checkRead(t, o, data, 100, 1000) })
	}
	// Every reader has looked the block up (and joined the fetch) before
	// the single fetch is allowed to finish.
	waitFor(t, "all readers to miss", func() bool { return c.Stats().Misses == readers })
	close(gate)
	wg.Wait()
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d readers caused %d fetches, want 1", readers, n)
	}
	checkRead(t, o, data, 0, 4096)
	if s := c.Stats(); s.Fetches != 1 || s.Hits != 1 {
		t.Fatalf("stats after a warm read: %+v", s)
	}
}

func TestCancelledLeaderWaiterTakesOver(t *testing.T) {
	src := newFakeSource()
	data := src.put("k", 3*4096, 4)
	never := make(chan struct{})
	src.hold = func(n int64) <-chan struct{} {
		if n == 1 {
			return never // only the leader's fetch hangs, until its ctx ends
		}
		return nil
	}
	src.started = make(chan int64, 10)
	c := newCache(t, Options{BlockSize: 4096, ReadAhead: -1})
	o := c.Object(src, "k", 3*4096, "v")

	ctx, cancel := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := o.ReadAt(ctx, make([]byte, 4096), 4096)
		leaderErr <- err
	}()
	<-src.started
	waiterDone := make(chan struct{})
	go func() {
		defer close(waiterDone)
		checkRead(t, o, data, 4096+10, 100)
	}()
	waitFor(t, "the waiter to join", func() bool { return c.Stats().Misses == 2 })
	cancel()
	err := <-leaderErr
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "k [4096,8192)") {
		t.Fatalf("leader error = %v, want context.Canceled naming the key and range", err)
	}
	<-waiterDone
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2 (the abandoned one and the waiter's)", n)
	}
}

func TestFailedFetchesAreNotCached(t *testing.T) {
	cases := []struct {
		name   string
		inject func(*fakeSource)
		want   error
	}{
		{"error", func(s *fakeSource) { s.failN.Store(1) }, errInjected},
		{"short read", func(s *fakeSource) { s.shortN.Store(1) }, ErrShortRead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource()
			data := src.put("tbl/part-1", 5*1024+10, 5)
			c := newCache(t, Options{BlockSize: 1024, ReadAhead: -1})
			o := c.Object(src, "tbl/part-1", int64(len(data)), "v")
			tc.inject(src)
			_, err := o.ReadAt(context.Background(), make([]byte, 1000), 1024)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "tbl/part-1 [") {
				t.Fatalf("ReadAt = %v, want %v naming the key and range", err, tc.want)
			}
			if s := c.Stats(); s.MemoryBytes != 0 {
				t.Fatalf("a failed fetch left %d bytes in memory", s.MemoryBytes)
			}
			checkRead(t, o, data, 1024, 1000)
			if n := src.reads.Load(); n != 2 {
				t.Fatalf("fetches = %d, want 2: the failure must not be cached", n)
			}
		})
	}
}

func TestMemoryBound(t *testing.T) {
	const bs, limit = 1024, 8 * 1024
	src := newFakeSource()
	objs := map[string][]byte{}
	for i, k := range []string{"a", "b", "c"} {
		objs[k] = src.put(k, 40*bs+int(i)*100, uint64(i))
	}
	c := newCache(t, Options{BlockSize: bs, MemoryBytes: limit, ReadAhead: 4})
	var wg sync.WaitGroup
	for g, k := range []string{"a", "b", "c", "a"} {
		o := c.Object(src, k, int64(len(objs[k])), "v")
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 300 {
				checkRead(t, o, objs[k], r.Int64N(int64(len(objs[k]))), r.IntN(3*bs))
				if held := c.Stats().MemoryBytes; held > limit+bs {
					t.Errorf("memory held %d > limit %d + one block", held, limit)
					return
				}
			}
		})
	}
	wg.Wait()
	c.Close()
	s := c.Stats()
	if s.MemoryBytes > limit || s.Evictions == 0 {
		t.Fatalf("after random reads: %+v; want MemoryBytes ≤ %d and evictions", s, limit)
	}
	// The counter agrees with the blocks really held.
	var sum int64
	for _, b := range c.blocks.lru.Values() {
		sum += int64(len(b))
	}
	if sum != s.MemoryBytes {
		t.Fatalf("blocks held sum to %d bytes, MemoryBytes says %d", sum, s.MemoryBytes)
	}
}

func TestCancelledWaiterReturnsPromptly(t *testing.T) {
	src := newFakeSource()
	data := src.put("k", 4096, 6)
	gate := make(chan struct{})
	src.hold = func(int64) <-chan struct{} { return gate }
	c := newCache(t, Options{BlockSize: 4096, ReadAhead: -1})
	o := c.Object(src, "k", 4096, "v")
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		checkRead(t, o, data, 0, 10)
	}()
	waitFor(t, "the leader's fetch", func() bool { return src.reads.Load() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.ReadAt(ctx, make([]byte, 10), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}
	close(gate)
	<-leaderDone // the leader is not disturbed by its waiter leaving
}
