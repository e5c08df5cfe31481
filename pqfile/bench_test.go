package pqfile

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
)

type benchRow struct {
	ID      int64   `parquet:"id"`
	Cat     string  `parquet:"cat,dict"`
	V       float64 `parquet:"v"`
	Opt     *int32  `parquet:"opt,optional"`
	Payload []byte  `parquet:"payload"`
}

// benchFile writes a snappy file of about size bytes in 8 row groups to dir.
func benchFile(b *testing.B, dir string, size int64) (string, []int64, int64) {
	b.Helper()
	const rowBytes = 84 // measured average on-disk bytes per row with snappy
	rows := size / rowBytes
	path := filepath.Join(dir, "bench.parquet")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := parquet.NewGenericWriter[benchRow](f, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(rows/8+1))
	rng := rand.New(rand.NewPCG(1, 1))
	batch := make([]benchRow, 0, 4096)
	for i := range rows {
		payload := make([]byte, 64)
		for k := range payload {
			payload[k] = byte(rng.IntN(256))
		}
		r := benchRow{ID: i, Cat: fmt.Sprint("c", i%50), V: rng.Float64(), Payload: payload}
		if i%3 != 0 {
			o := int32(i)
			r.Opt = &o
		}
		if batch = append(batch, r); len(batch) == cap(batch) {
			if _, err := w.Write(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := w.Write(batch); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var firsts []int64
	var n int64
	for _, rg := range footerOf(&testing.T{}, data).meta.RowGroups {
		firsts = append(firsts, n)
		n += rg.NumRows
	}
	return path, firsts, n
}

// BenchmarkRewrite compares serving a file with deletes against a plain io.Copy of it, both from
// an *os.File (page cache) to io.Discard; the /layout cases build the Layout instead of the whole
// output (only re-encoded chunks and the footer are written). Each sub-benchmark reports MB/s of source bytes and
// x-copy, its time over the copy's time. DELTAFS_BENCH_LARGE=1 uses 256 MiB instead of 32 MiB.
func BenchmarkRewrite(b *testing.B) {
	f, size, firsts, _ := openBenchFile(b)
	some := func(groups ...int) *roaring64.Bitmap {
		del := roaring64.New()
		for _, g := range groups {
			for r := firsts[g]; r < firsts[g]+1000; r += 7 {
				del.Add(uint64(r))
			}
		}
		return del
	}
	copyTime := timeCopy(b, f, size)
	cases := []struct {
		name string
		del  *roaring64.Bitmap
	}{
		{"copy", nil},
		{"footer-only", roaring64.New()},
		{"deletes-in-1-of-8", some(3)},
		{"deletes-in-8-of-8", some(0, 1, 2, 3, 4, 5, 6, 7)},
		{"drop-1-of-8", rangeBitmap(firsts[3], firsts[4])},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			start := time.Now()
			for b.Loop() {
				if c.del == nil {
					copyFile(b, f, size)
					continue
				}
				if _, err := Rewrite(f, size, c.del, nil, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(copyTime), "x-copy")
		})
		if c.del == nil {
			continue
		}
		b.Run(c.name+"/layout", func(b *testing.B) {
			b.SetBytes(size)
			start := time.Now()
			for b.Loop() {
				p, err := NewPlan(f, size, c.del, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.WriteLayout(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(copyTime), "x-copy")
		})
	}
}

// openBenchFile writes the benchmarks' file (32 MiB, 256 MiB with DELTAFS_BENCH_LARGE=1) and
// opens it for the benchmark's duration; it returns its size, the first row of each row group
// and the row count.
func openBenchFile(b *testing.B) (f *os.File, size int64, firsts []int64, rows int64) {
	size = 32 << 20
	if os.Getenv("DELTAFS_BENCH_LARGE") == "1" {
		size = 256 << 20
	}
	path, firsts, rows := benchFile(b, b.TempDir(), size)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return f, st.Size(), firsts, rows
}

func copyFile(b *testing.B, f *os.File, size int64) {
	if _, err := io.Copy(io.Discard, io.NewSectionReader(f, 0, size)); err != nil {
		b.Fatal(err)
	}
}

// timeCopy returns the best of a few plain copies of the file.
func timeCopy(b *testing.B, f *os.File, size int64) time.Duration {
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		copyFile(b, f, size)
		best = min(best, time.Since(start))
	}
	return best
}
