package serve

import (
	"context"
	"os"
	"testing"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// BenchmarkWarmLocal decides the first 10,000 files of a local table as a
// listing's warm-up does (footer read, verdict, partition columns'
// splice), a fresh verdict cache each round: the per-file CPU a first
// listing pays beside the lookups. DELTAFS_GLOB_TABLE names the table
// (bench/glob.sh generates bench/out/glob/table-100000).
func BenchmarkWarmLocal(b *testing.B) {
	dir := os.Getenv("DELTAFS_GLOB_TABLE")
	if dir == "" {
		testenv.Skip(b, "DELTAFS_GLOB_TABLE not set (bench/glob.sh sets it to its generated table)")
	}
	ctx := context.Background()
	st, err := blobstore.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	snap, err := delta.Open(st, delta.Options{}).Latest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	adds := snap.Files()[:min(10_000, len(snap.Files()))]
	for _, parts := range []bool{false, true} {
		b.Run(map[bool]string{false: "schema", true: "partitions"}[parts], func(b *testing.B) {
			cache, err := blobcache.New(blobcache.Options{DiskDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer cache.Close()
			tbl := NewTable("t", st, cache, Options{PartitionsInFiles: parts})
			shape, err := tbl.shape(snap)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				tbl.verdicts, tbl.mem = newVerdictCache(maxVerdicts), newMemPatches(memPatchBytes) // nothing decided or laid out
				for _, a := range adds {
					tbl.warmOne(ctx, snap, shape, a)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(adds))/1e3, "us/file")
		})
	}
}
