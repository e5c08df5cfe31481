package integration

// The requests one batch of many files makes to S3 (every
// create, mkdir and batch file made a LIST). Run with
//
//	go test ./integration -run '^$' -bench BenchmarkS3BatchRequests -benchtime 1x
//
// Request counts do not depend on the machine's load.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

func BenchmarkS3BatchRequests(b *testing.B) {
	const files = 1000
	testenv.RequireFUSE(b)
	srv := testenv.StartS3(b)
	testenv.UploadDir(b, srv.URL, "warehouse/basic", testenv.Fixture(b, fixtureAppend))
	proxy := newCountingProxy(b, srv.Addr)
	mnt := mountFS(b, mount.Config{Sources: []mount.Source{{Name: "t", URL: proxy.url(srv, "warehouse/basic")}}})
	data := parquetBytes(b, []basicRow{{ptr("b"), ptr[int64](1), ptr(2.5)}})
	for i := range b.N {
		dir := filepath.Join(mnt, "t", "inbox", fmt.Sprintf(".batch-%d", i))
		proxy.take()
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range files {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%04d.parquet", j)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		count := func(what string) {
			counts := map[string]int{}
			for _, r := range proxy.take() {
				counts[r.op]++
			}
			for _, op := range []string{"LIST", "PUT", "GET", "HEAD"} {
				b.ReportMetric(float64(counts[op]), op+"-"+what+"/op")
			}
		}
		count("writes")
		if err := os.Rename(dir, filepath.Join(mnt, "t", "inbox", fmt.Sprintf("batch-%d", i))); err != nil {
			b.Fatalf("rename of the batch: %v", err)
		}
		count("rename")
	}
}
