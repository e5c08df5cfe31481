package blobcache

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestDerivedUnsyncedDiscardRebuilds builds without fsync, discards the file as a caller finding
// it torn would, and checks that the open file stays readable, the accounting drops it, and the
// next call builds it again.
func TestDerivedUnsyncedDiscardRebuilds(t *testing.T) {
	dir := t.TempDir()
	data := randomBytes(5000, 23)
	var builds atomic.Int64
	c := newCache(t, Options{DiskDir: dir})
	ctx := context.Background()
	f, err := c.DerivedUnsynced(ctx, "key", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, data)
	f.Discard()
	f.Discard() // idempotent
	if s := c.Stats(); s.DiskBytes != 0 {
		t.Fatalf("after Discard the cache accounts %d bytes, want 0", s.DiskBytes)
	}
	got := make([]byte, len(data))
	if n, err := f.ReadAt(got, 0); n != len(data) || err != nil {
		t.Fatalf("discarded open file: ReadAt = %d, %v", n, err)
	}
	f.Close()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("discarded file still on disk: %v", names)
	}
	g, err := c.DerivedUnsynced(ctx, "key", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	checkFile(t, g, data)
	if n := builds.Load(); n != 2 {
		t.Fatalf("builds = %d, want 2 (one after the discard)", n)
	}
}
