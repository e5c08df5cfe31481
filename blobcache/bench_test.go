package blobcache

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"
)

const benchObjectSize = 64 << 20

// benchSource writes a 64 MiB object to a local directory and returns a
// gocloud fileblob Source over it, as the mount has for local tables.
func benchSource(b *testing.B) Source {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "obj"), randomBytes(benchObjectSize, 1), 0o644); err != nil {
		b.Fatal(err)
	}
	bucket, err := fileblob.OpenBucket(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bucket.Close() })
	return bucketSource{bucket}
}

// readDirect reads the whole object with one ranged read into buf.
func readDirect(b *testing.B, src Source, buf []byte) {
	rc, err := src.ReadRange(context.Background(), "obj", 0, benchObjectSize)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, buf); err != nil {
		b.Fatal(err)
	}
}

// readCached reads the object cold through c in chunks of len(buf), as the
// kernel reads a file sequentially; version makes the blocks new.
func readCached(b *testing.B, c *Cache, src Source, version string, buf []byte) {
	o := c.Object(src, "obj", benchObjectSize, version)
	for off := int64(0); off < benchObjectSize; off += int64(len(buf)) {
		if _, err := o.ReadAt(context.Background(), buf, off); err != nil && err != io.EOF {
			b.Fatal(err)
		}
	}
}

// remoteSource models an object store over a local Source: every ranged
// read waits latency before its first byte and then streams at most
// bytesPerSec (0: unlimited).
type remoteSource struct {
	Source
	latency     time.Duration
	bytesPerSec float64
}

func (s remoteSource) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	time.Sleep(s.latency)
	rc, err := s.Source.ReadRange(ctx, key, off, length)
	if err != nil || s.bytesPerSec == 0 {
		return rc, err
	}
	return &throttled{ReadCloser: rc, rate: s.bytesPerSec, start: time.Now()}, nil
}

type throttled struct {
	io.ReadCloser
	rate  float64
	start time.Time
	n     int64
}

func (t *throttled) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p[:min(len(p), 256<<10)])
	t.n += int64(n)
	due := t.start.Add(time.Duration(float64(t.n) / t.rate * float64(time.Second)))
	time.Sleep(time.Until(due))
	return n, err
}

// BenchmarkSequential compares a cold sequential read of a 64 MiB object
// through the cache (128 KiB reads, as FUSE issues) with one direct ranged
// read of the whole object from the same source: a local file through
// gocloud fileblob, and the same file made to look like an object store
// (5 ms to first byte, 100 MB/s per request). It reports both throughputs
// and cached/direct as "ratio" (target ≥ 0.8).
func BenchmarkSequential(b *testing.B) {
	local := benchSource(b)
	for _, tc := range []struct {
		name string
		src  Source
	}{
		{"local", local},
		{"remote", remoteSource{local, 5 * time.Millisecond, 100e6}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			src := tc.src
			c := newCache(b, Options{})
			whole, chunk := make([]byte, benchObjectSize), make([]byte, 128<<10)
			readDirect(b, src, whole) // warm the page cache for both
			var direct, cached time.Duration
			b.SetBytes(2 * benchObjectSize)
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				readDirect(b, src, whole)
				direct += time.Since(start)
				start = time.Now()
				readCached(b, c, src, fmt.Sprint(i), chunk)
				cached += time.Since(start)
			}
			mb := float64(b.N) * benchObjectSize / 1e6
			b.ReportMetric(mb/direct.Seconds(), "direct-MB/s")
			b.ReportMetric(mb/cached.Seconds(), "cached-MB/s")
			b.ReportMetric(direct.Seconds()/cached.Seconds(), "ratio")
		})
	}
}

// BenchmarkRandom4KWarm reads random 4 KiB ranges of a 64 MiB object that
// is entirely in memory.
func BenchmarkRandom4KWarm(b *testing.B) {
	src := benchSource(b)
	c := newCache(b, Options{})
	readCached(b, c, src, "warm", make([]byte, 1<<20))
	o := c.Object(src, "obj", benchObjectSize, "warm")
	before := c.Stats().Fetches
	b.SetBytes(4096)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		buf := make([]byte, 4096)
		for pb.Next() {
			if _, err := o.ReadAt(context.Background(), buf, r.Int64N(benchObjectSize-4096)); err != nil {
				b.Fatal(err)
			}
		}
	})
	if n := c.Stats().Fetches - before; n != 0 {
		b.Fatalf("warm random reads fetched %d times", n)
	}
}
