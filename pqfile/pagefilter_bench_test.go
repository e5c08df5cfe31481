package pqfile

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// BenchmarkRewritePageFilter compares the page filter with parquet-go's re-encoding (the
// fallback, forced with pageFilterOff) on the file of BenchmarkRewrite, writing the whole output
// (/write) or the Layout's patch (/layout). Deletes are light (every 7th of a group's first 1000
// rows: one page per column touched) or dense (every 10th row, as mountbench: every page
// touched), in 1 or all 8 row groups. x-copy is the time over a plain copy of the file.
func BenchmarkRewritePageFilter(b *testing.B) {
	f, size, firsts, n := openBenchFile(b)
	copyTime := timeCopy(b, f, size)
	for _, c := range pageFilterBenchCases(firsts, n) {
		for _, path := range []string{"pagefilter", "parquet-go"} {
			for _, mode := range []string{"write", "layout"} {
				b.Run(c.name+"/"+path+"/"+mode, func(b *testing.B) {
					pageFilterOff.Store(path == "parquet-go")
					defer pageFilterOff.Store(false)
					b.SetBytes(size)
					start := time.Now()
					for b.Loop() {
						rewriteOnce(b, f, size, c.del, mode == "layout")
					}
					b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(copyTime), "x-copy")
				})
			}
		}
	}
}

// pageFilterBenchCases returns the deletion sets of BenchmarkRewritePageFilter.
func pageFilterBenchCases(firsts []int64, n int64) []deletionCase {
	end := func(g int) int64 {
		if g+1 < len(firsts) {
			return firsts[g+1]
		}
		return n
	}
	light := func(groups ...int) *roaring64.Bitmap {
		del := roaring64.New()
		for _, g := range groups {
			for r := firsts[g]; r < firsts[g]+1000; r += 7 {
				del.Add(uint64(r))
			}
		}
		return del
	}
	dense := func(groups ...int) *roaring64.Bitmap {
		del := roaring64.New()
		for _, g := range groups {
			for r := firsts[g]; r < end(g); r += 10 {
				del.Add(uint64(r))
			}
		}
		return del
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	return []deletionCase{
		{"light-1-of-8", light(3)},
		{"light-8-of-8", light(all...)},
		{"dense-1-of-8", dense(3)},
		{"dense-8-of-8", dense(all...)},
	}
}

// rewriteOnce writes the output of src without del to io.Discard, or its Layout's patch.
func rewriteOnce(b *testing.B, src *os.File, size int64, del *roaring64.Bitmap, layout bool) {
	p, err := NewPlan(src, size, del, nil)
	if err != nil {
		b.Fatal(err)
	}
	if layout {
		_, err = p.WriteLayout(io.Discard)
	} else {
		_, err = p.WriteTo(io.Discard)
	}
	if err != nil {
		b.Fatal(err)
	}
}
