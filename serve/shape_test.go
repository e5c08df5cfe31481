package serve

import (
	"context"
	"testing"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// openFixture returns a serve.Table of a shared fixture and its latest snapshot.
func openFixture(t *testing.T, name string, opts Options) (*Table, *delta.Snapshot) {
	t.Helper()
	return openFixtureIn(t, name, opts, t.TempDir())
}

// openFixtureIn is openFixture with its disk cache in dir.
func openFixtureIn(t *testing.T, name string, opts Options, dir string) (*Table, *delta.Snapshot) {
	t.Helper()
	st, err := blobstore.Open(context.Background(), testenv.Fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cache, err := blobcache.New(blobcache.Options{DiskDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	snap, err := delta.Open(st, delta.Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return NewTable("t", st, cache, opts), snap
}

// Warm decides every stored file of a listing in the background: the
// verdicts are there before any size is asked, and each is the one Size
// would reach (a file written before the table's schema changed is
// reshaped, the others are served as stored). A local table warms with
// pread, an object store's with ranged reads.
func TestWarmDecidesAhead(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(map[bool]string{true: "local", false: "store"}[local], func(t *testing.T) {
			tbl, snap := openFixture(t, "delta-kernel-rs/golden-log-replay-latest-metadata-protocol", Options{})
			if !local {
				tbl.local, tbl.root = "", nil // read as an object store's table is
			}
			files, err := snap.LiveFiles()
			if err != nil || len(files) < 2 {
				t.Fatalf("%d live files, %v", len(files), err)
			}
			tbl.Warm(snap, snap.Files())
			deadline := time.Now().Add(10 * time.Second)
			reshaped := 0
			for i := range files {
				f := &files[i]
				var n int64
				var ok bool
				vk, err := tbl.verdictKey(snap, f)
				if err != nil {
					t.Fatal(err)
				}
				// A local warm-up records the verdict, then the rewritten
				// size: wait for the size there.
				for (!ok || local && n == sizeUnknown) && time.Now().Before(deadline) {
					if n, ok = tbl.verdicts.get(vk); !ok || local && n == sizeUnknown {
						time.Sleep(5 * time.Millisecond)
					}
				}
				if !ok {
					t.Fatalf("%s: no verdict 10 s after Warm", f.Key)
				}
				rw := n != servedAsStored
				if local && n == sizeUnknown {
					t.Errorf("%s: a local warm-up leaves the rewritten size unknown", f.Key)
				}
				size, err := tbl.Size(context.Background(), snap, f)
				if err != nil {
					t.Fatal(err)
				}
				if rw != (size != f.Add.Size) {
					t.Errorf("%s: warmed verdict reshape=%v, served size %d of stored %d", f.Key, rw, size, f.Add.Size)
				}
				if n >= 0 && n != size {
					t.Errorf("%s: warmed size %d, Size says %d", f.Key, n, size)
				}
				if rw {
					reshaped++
				}
			}
			if reshaped == 0 || reshaped == len(files) {
				t.Errorf("%d of %d files reshaped: the fixture has files from before and after its schema grew", reshaped, len(files))
			}
		})
	}
}

// Prepare makes the shape of the snapshot's files ahead of any stat, and
// reads no file to do so (a table whose data files are all missing
// prepares the same).
func TestPrepareMakesTheShape(t *testing.T) {
	caches := NewCaches() // the mount's: the Table's Close keeps them
	tbl, snap := openFixture(t, "dat/basic_append", Options{Caches: caches})
	md := snap.Metadata()
	k := shapeKey{md.SchemaString, "", false}
	if len(md.PartitionColumns) > 0 {
		t.Fatalf("fixture has partition columns %v; the key above assumes none", md.PartitionColumns)
	}
	tbl.root = nil
	tbl.store = nil // any read would now fail, or panic
	tbl.Prepare(snap)
	tbl.Close() // waits for the background work
	s := caches.shapes.get(k)
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if s == nil || s.whole == nil || len(s.whole.Columns) != len(schema.Fields) {
		t.Fatalf("after Prepare, the shape cache holds %+v for the snapshot's schema", s)
	}
}
