package integration

// Benchmarks of appends through the inbox of a `deltafs mount` process, each
// reported as a ratio to a baseline measured in the same
// iteration: a 64 MiB drop against a plain copy plus one small commit,
// small-file commits/s against writeback's in-process floor, and 8
// concurrent writers against one.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/writeback"
)

// benchMount mounts a fresh copy of the basic_append fixture in a
// `deltafs mount` process and returns its inbox.
func benchMount(b *testing.B) string {
	b.Helper()
	root := testenv.CopyFixture(b, fixtureAppend)
	m := startMount(b, mountOpts{cacheDir: b.TempDir(), sources: []string{"t=" + root}})
	return filepath.Join(m.mnt, "t", "inbox")
}

// benchParquet encodes rows of random numbers until they hold about
// mib MiB of values (two 8-byte columns), in batches of 64Ki rows.
func benchParquet(b *testing.B, mib int) []byte {
	b.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[basicRow](&buf)
	rng := rand.New(rand.NewPCG(7, 7))
	batch := make([]basicRow, 1<<16) // 1 MiB of two 8-byte columns
	for range mib {
		for i := range batch {
			n, f := rng.Int64(), rng.Float64()
			batch[i] = basicRow{Number: &n, Float: &f}
		}
		if _, err := w.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// smallParquet is a one-row file.
func smallParquet(b *testing.B) []byte {
	b.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[basicRow](&buf)
	if _, err := w.Write([]basicRow{{Letter: ptr("b"), Number: ptr[int64](1), Float: ptr(2.0)}}); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// timedWrite writes data to path (1 MiB writes) and closes it; it returns
// the whole time and the time close() alone took.
func timedWrite(b *testing.B, path string, data []byte) (total, closeTime time.Duration) {
	b.Helper()
	t0 := time.Now()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	for off := 0; off < len(data); off += 1 << 20 {
		if _, err := f.Write(data[off:min(off+1<<20, len(data))]); err != nil {
			b.Fatal(err)
		}
	}
	t1 := time.Now()
	if err := f.Close(); err != nil {
		b.Fatalf("close %s: %v", path, err)
	}
	return time.Since(t0), time.Since(t1)
}

// BenchmarkInboxDrop64MiB: writing a 64 MiB Parquet file into the inbox
// until close() returns (the commit included), against a plain copy of
// the same bytes to a local file plus one small-file drop (one commit).
// The target is on close()'s latency: close/(copy+commit) <= 1.3;
// drop/(copy+commit) also counts the writes through FUSE.
func BenchmarkInboxDrop64MiB(b *testing.B) {
	inbox := benchMount(b)
	big, small := benchParquet(b, 64), smallParquet(b)
	plain := b.TempDir()
	var drop, closeT, copyT, commitT time.Duration
	i := 0
	for b.Loop() {
		c, _ := timedWrite(b, filepath.Join(plain, fmt.Sprintf("copy-%d.parquet", i)), big)
		s, _ := timedWrite(b, filepath.Join(inbox, fmt.Sprintf("small-%d.parquet", i)), small)
		d, cl := timedWrite(b, filepath.Join(inbox, fmt.Sprintf("big-%d.parquet", i)), big)
		os.Remove(filepath.Join(plain, fmt.Sprintf("copy-%d.parquet", i)))
		copyT, commitT, drop, closeT = copyT+c, commitT+s, drop+d, closeT+cl
		i++
	}
	n := float64(i)
	b.SetBytes(int64(len(big)))
	b.ReportMetric(float64(closeT)/float64(copyT+commitT), "close/(copy+commit)")
	b.ReportMetric(float64(drop)/float64(copyT+commitT), "drop/(copy+commit)")
	b.ReportMetric(float64(closeT.Milliseconds())/n, "close-ms")
	b.ReportMetric(float64(drop.Milliseconds())/n, "drop-ms")
	b.ReportMetric(float64(copyT.Milliseconds())/n, "copy-ms")
	b.ReportMetric(float64(commitT.Milliseconds())/n, "commit-ms")
}

// BenchmarkInboxSmallCommits: one writer dropping one-row files into the
// inbox, each one commit (target >= 50 commits/s), against writeback's
// Append of the same file to another copy of the table in-process (the
// floor: no FUSE, no staging, no process hop).
func BenchmarkInboxSmallCommits(b *testing.B) {
	inbox := benchMount(b)
	small := smallParquet(b)
	src := filepath.Join(b.TempDir(), "small.parquet")
	if err := os.WriteFile(src, small, 0o644); err != nil {
		b.Fatal(err)
	}
	c := benchCommitter(b)
	const batch = 20
	var mountT, directT time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		for range batch {
			timedWrite(b, filepath.Join(inbox, fmt.Sprintf("s%d.parquet", i)), small)
			i++
		}
		t1 := time.Now()
		for range batch {
			if _, err := c.Append(context.Background(), []writeback.File{{LocalPath: src, Name: "small.parquet"}}); err != nil {
				b.Fatal(err)
			}
		}
		mountT, directT = mountT+t1.Sub(t0), directT+time.Since(t1)
	}
	b.ReportMetric(float64(i)/mountT.Seconds(), "commits/s")
	b.ReportMetric(float64(i)/directT.Seconds(), "direct-commits/s")
	b.ReportMetric(float64(mountT)/float64(directT), "mount/direct")
}

// benchCommitter is a writeback.Committer on a fresh copy of basic_append.
func benchCommitter(b *testing.B) *writeback.Committer {
	b.Helper()
	root := testenv.CopyFixture(b, fixtureAppend)
	st, err := blobstore.Open(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return writeback.New(delta.Open(st, delta.Options{}), writeback.Options{})
}

// BenchmarkInbox8Writers: 8 writers dropping files into one mount's
// inbox at once, against one writer dropping as many files alone, for
// one-row files (commits/s) and 4 MiB files (MiB/s). Commits serialize on
// the log, so the ratio shows what concurrency costs or gains.
func BenchmarkInbox8Writers(b *testing.B) {
	for _, c := range []struct {
		name string
		mib  int
	}{{"small", 0}, {"4MiB", 4}} {
		b.Run(c.name, func(b *testing.B) {
			inbox := benchMount(b)
			data := smallParquet(b)
			if c.mib > 0 {
				data = benchParquet(b, c.mib)
			}
			const writers, perWriter = 8, 3
			var one, eight time.Duration
			i := 0
			for b.Loop() {
				one += dropConcurrently(b, inbox, fmt.Sprintf("o%d", i), 1, writers*perWriter, data)
				eight += dropConcurrently(b, inbox, fmt.Sprintf("e%d", i), writers, perWriter, data)
				i++
			}
			files := float64(i * writers * perWriter)
			b.ReportMetric(files/eight.Seconds(), "commits/s")
			b.ReportMetric(files/one.Seconds(), "1-writer-commits/s")
			b.ReportMetric(float64(one)/float64(eight), "8-writers/1-writer")
			if c.mib > 0 {
				b.ReportMetric(files*float64(len(data))/(1<<20)/eight.Seconds(), "MiB/s")
			}
		})
	}
}

// dropConcurrently has n writers drop each files copies of data into
// inbox and returns the wall time.
func dropConcurrently(b *testing.B, inbox, tag string, n, each int, data []byte) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range n {
		wg.Go(func() {
			for j := range each {
				if _, err := writeInChunks(filepath.Join(inbox, fmt.Sprintf("%s-%d-%d.parquet", tag, w, j)), data); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return time.Since(start)
}
