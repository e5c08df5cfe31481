package integration

// Object-store tests: the engine reads fixture tables uploaded to real
// S3 (versitygw), GCS (fake-gcs-server) and Azure (Azurite) servers;
// put-if-absent races; errors for a missing bucket and bad credentials.
// The S3-only tests (request counts, faults, the mount) are in
// objectstore_s3_test.go.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/fixturecheck"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// s3Fixtures cover every way a table's state is stored: deletion vectors
// (UUID-named files, inline), column mapping (name, id), checkpoints
// (classic, multi-part, V2 with and without sidecars, a corrupt
// _last_checkpoint, a log of only checkpoints), time travel against
// expected/vN, and object keys that need escaping.
var s3Fixtures = []string{
	"dat/multi_partitioned",
	"delta-kernel-rs/golden-snapshot-repartitioned",
	"delta-kernel-rs/golden-dv-partitioned-with-checkpoint",
	"delta-kernel-rs/golden-dv-with-columnmapping",
	"delta-kernel-rs/golden-log-replay-dv-key-cases",
	"delta-kernel-rs/cdf-table-with-dv",
	"delta-rs/table_with_deletion_logs",
	"delta-kernel-rs/golden-table-with-columnmapping-mode-id",
	"delta-kernel-rs/golden-table-with-columnmapping-mode-name",
	"delta-kernel-rs/golden-basic-with-inserts-deletes-checkpoint",
	"delta-kernel-rs/golden-corrupted-last-checkpoint-kernel",
	"delta-kernel-rs/golden-only-checkpoint-files",
	"delta-kernel-rs/golden-multi-part-checkpoint",
	"delta/kernel-kernel-pagination-multi-part-checkpoints",
	"delta-kernel-rs/golden-v2-checkpoint-parquet",
	"delta-kernel-rs/v2-checkpoints-json-with-sidecars",
	"delta-kernel-rs/v2-parquet-sidecars-struct-stats-only",
	"delta/kernel-kernel-pagination-v2-checkpoint-parquet",
	"delta-kernel-rs/golden-data-reader-escaped-chars",
	fixtureRefused,
}

// smallFixtures are the GCS and Azure subset: one of each kind.
var smallFixtures = []string{
	"dat/multi_partitioned",
	"delta-kernel-rs/golden-dv-with-columnmapping",
	"delta-kernel-rs/golden-multi-part-checkpoint",
	"delta-kernel-rs/v2-parquet-sidecars-struct-stats-only",
	"delta-kernel-rs/golden-data-reader-escaped-chars",
	fixtureRefused,
}

// objectBackends are the servers every object-store test runs against.
var objectBackends = []struct {
	kind     string
	start    func(testing.TB) *testenv.Server
	fixtures []string
}{
	{"s3", testenv.StartS3, s3Fixtures},
	{"gcs", testenv.StartGCS, smallFixtures},
	{"azure", testenv.StartAzure, smallFixtures},
}

// TestObjectStores runs, on each backend's server: the engine conformance
// on its fixtures, an 8-way put-if-absent race, the atomicity probe, and
// the errors for a missing bucket.
func TestObjectStores(t *testing.T) {
	for _, b := range objectBackends {
		t.Run(b.kind, func(t *testing.T) {
			t0 := time.Now()
			srv := b.start(t)
			t.Logf("%s server up in %v", b.kind, time.Since(t0).Round(time.Millisecond))
			t.Run("conformance", func(t *testing.T) { storeConformance(t, srv, b.fixtures) })
			t.Run("put-if-absent", func(t *testing.T) { putIfAbsentRace(t, openStore(t, srv.BucketURL("race"))) })
			t.Run("missing-bucket", func(t *testing.T) { missingBucket(t, srv) })
		})
	}
}

// storeConformance uploads the fixtures' tables and checks each through
// the engine over the server.
func storeConformance(t *testing.T, srv *testenv.Server, fixtures []string) {
	t0 := time.Now()
	for _, name := range fixtures {
		testenv.UploadDir(t, srv.URL, "tables/"+name, testenv.Fixture(t, name))
	}
	t.Logf("uploaded %d tables in %v", len(fixtures), time.Since(t0).Round(time.Millisecond))
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkStoreFixture(t, srv.BucketURL("tables/"+name), name)
		})
	}
}

// openStore opens a blobstore URL, closed when the test ends.
func openStore(t testing.TB, u string) *blobstore.Store {
	t.Helper()
	st, err := blobstore.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// checkStoreFixture is the engine conformance check of one fixture
// (delta/conformance_test.go) over a store URL: the latest snapshot
// matches FIXTURE.json, every expected/vN has the snapshot's live rows,
// every listed version builds. The refused fixture must be refused.
func checkStoreFixture(t *testing.T, u, name string) {
	tbl := delta.Open(openStore(t, u), delta.Options{})
	snap, err := tbl.Latest(context.Background())
	if name == fixtureRefused {
		if !errors.Is(err, delta.ErrUnsupportedFeature) {
			t.Fatalf("latest: got %v, want an error wrapping %q", err, delta.ErrUnsupportedFeature)
		}
		return
	}
	if err != nil {
		t.Fatalf("latest: %v", err)
	}
	fixturecheck.Table(t, tbl, snap, name)
}

// putIfAbsentRace races 8 writers for each of 10 commit keys: exactly one
// wins, every loser gets ErrExists, the winner's bytes are stored; then the
// atomicity probe must pass.
func putIfAbsentRace(t *testing.T, st *blobstore.Store) {
	ctx := context.Background()
	for trial := range 10 {
		key := fmt.Sprintf("_delta_log/%020d.json", trial)
		var wins atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"commitInfo":{"writer":%d}}`+"\n", w)
				switch err := st.PutIfAbsent(ctx, key, []byte(body)); {
				case err == nil:
					wins.Add(1)
					winner.Store(body)
				case !errors.Is(err, delta.ErrExists):
					t.Errorf("writer %d: %v", w, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("trial %d: %d winners", trial, wins.Load())
		}
		data, err := delta.ReadAll(ctx, st, key)
		if err != nil || string(data) != winner.Load() {
			t.Fatalf("trial %d: stored %q (%v), winner wrote %q", trial, data, err, winner.Load())
		}
	}
	if err := st.ProbeAtomicPut(ctx); err != nil {
		t.Errorf("ProbeAtomicPut: %v", err)
	}
	objs, err := st.List(ctx, "_delta_log/", "")
	if err != nil || len(objs) != 10 {
		t.Errorf("after the races and the probe _delta_log lists %d objects (%v), want 10", len(objs), err)
	}
}

// missingBucket checks that a table in a bucket that does not exist fails
// with ErrNoBucket, naming the URL.
func missingBucket(t *testing.T, srv *testenv.Server) {
	u := strings.Replace(srv.BucketURL("tables/x"), srv.Bucket, "no-such-bucket", 1)
	_, err := delta.Open(openStore(t, u), delta.Options{}).Latest(context.Background())
	if !errors.Is(err, blobstore.ErrNoBucket) {
		t.Fatalf("latest in a missing bucket: got %v, want an error wrapping %q", err, blobstore.ErrNoBucket)
	}
	if !strings.Contains(err.Error(), "://no-such-bucket/tables/x") {
		t.Errorf("error does not name the table URL: %v", err)
	}
}
