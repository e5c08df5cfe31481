package writeback

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// BenchmarkAppendSmallFile measures one writer committing small files to
// a local table: validation, upload and commit of one 3-row file per op
// (reported as commits/s).
func BenchmarkAppendSmallFile(b *testing.B) {
	dir := testenv.CopyFixture(b, "dat/basic_append")
	c := New(openTable(b, dir), Options{})
	src := writeParquet(b, "small.parquet", []numberRow{{Number: ptr[int64](1)}, {Number: ptr[int64](2)}, {}})
	start := time.Now()
	for b.Loop() {
		if _, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "small.parquet"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
}

// BenchmarkAppend64MiB compares appending a 64 MiB file with copying it
// (the floor: the upload is a copy into the table dir).
func BenchmarkAppend64MiB(b *testing.B) {
	dir := testenv.CopyFixture(b, "dat/basic_append")
	rows := make([]numberRow, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range rows {
		n, f := rng.Int64(), rng.Float64()
		rows[i] = numberRow{Number: &n, AFloat: &f}
	}
	src := writeParquet(b, "big.parquet", rows)
	fi, _ := os.Stat(src)
	b.SetBytes(fi.Size())
	c := New(openTable(b, dir), Options{})
	var copyTime, appendTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := copyFile(src, filepath.Join(dir, fmt.Sprintf("copy-%d", rng.Int64()))); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "big.parquet"}}); err != nil {
			b.Fatal(err)
		}
		copyTime += t1.Sub(t0)
		appendTime += time.Since(t1)
	}
	b.ReportMetric(float64(appendTime)/float64(copyTime), "append/copy")
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
}
