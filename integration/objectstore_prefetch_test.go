package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// TestS3FooterPrefetchedOnOpen: opening a data file of an S3 table fetches
// its tail (where every Parquet reader starts) before any read, and the
// footer read that follows is served from memory, without another GET
// (the stat's footer check reads past the block cache).
func TestS3FooterPrefetchedOnOpen(t *testing.T) {
	srv := testenv.StartS3(t)
	root := testenv.Fixture(t, fixtureDV)
	testenv.UploadDir(t, srv.URL, "t", root)
	proxy := newCountingProxy(t, srv.Addr)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: proxy.url(srv, "t")}}})
	// A stat reads each file's footer once (its last 64 KiB, one ranged GET)
	// and warms its siblings' in the background: stat them all first and
	// let those reads finish, so that the requests counted below are the
	// open's and the read's.
	files := liveFiles(t, latestSnapshot(t, root))
	for p := range files {
		if _, err := os.Stat(filepath.Join(mnt, "t", "@latest", p)); err != nil {
			t.Fatal(err)
		}
	}
	for idle := 0; idle < 5; {
		if len(proxy.take()) == 0 {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	checked := 0
	for p, f := range files {
		if f.Add.DeletionVector != nil {
			continue // rewritten files are read by the materializer, not opened as stored
		}
		path := filepath.Join(mnt, "t", "@latest", p)
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		proxy.take()
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		key, size := "t/"+f.Key, f.Add.Size
		tail := fmt.Sprintf("-%d", size-1)
		var prefetch *s3Request
		for deadline := time.Now().Add(10 * time.Second); prefetch == nil && time.Now().Before(deadline); {
			for _, r := range proxy.take() {
				if r.op == http.MethodGet && r.key == key && len(r.rng) > len(tail) && r.rng[len(r.rng)-len(tail):] == tail {
					prefetch = &r
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if prefetch == nil {
			t.Fatalf("%s: no GET of its tail within 10 s of the open (before any read)", p)
		}
		buf := make([]byte, 8)
		if _, err := fh.ReadAt(buf, size-8); err != nil {
			t.Fatal(err)
		}
		if string(buf[4:]) != "PAR1" {
			t.Errorf("%s: tail %q is not a Parquet footer", p, buf)
		}
		for _, r := range proxy.take() {
			if r.key == key {
				t.Errorf("%s: the footer read made a %s (%s) after the prefetch %s", p, r.op, r.rng, prefetch.rng)
			}
		}
		fh.Close()
		checked++
	}
	if checked < 2 {
		t.Errorf("checked %d stored files, want at least 2", checked)
	}
}
