//go:build linux

package blobstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A listing of a directory that has not changed for a while is reused,
// and any change to the directory (a new commit, a removal) is listed at
// once: the reuse never hides a name.
func TestListTailsNeverStale(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(root, "_delta_log")
	if err := os.Mkdir(log, 0o755); err != nil {
		t.Fatal(err)
	}
	name := func(v int) string { return fmt.Sprintf("%020d.json", v) }
	for v := range 50 {
		if err := os.WriteFile(filepath.Join(log, name(v)), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(log, old, old); err != nil {
		t.Fatal(err)
	}
	// The ctime cannot be set back: wait for it to settle instead.
	time.Sleep(tailSettle + 100*time.Millisecond)
	ctx := context.Background()
	s, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list := func(from string) []string {
		t.Helper()
		names, ok, err := s.ListNames(ctx, "_delta_log", from)
		if err != nil || !ok {
			t.Fatalf("list: %v %v", ok, err)
		}
		return names
	}
	if got := list(name(48)); !slices.Equal(got, []string{name(48), name(49)}) {
		t.Fatalf("listed %v", got)
	}
	_, kept := s.tails.get(log, name(48))
	if _, trusted := dirToken(log, time.Now()); kept != trusted {
		t.Fatalf("tail kept %v, but the directory's times are trusted: %v", kept, trusted)
	}
	if got := list(name(49)); !slices.Equal(got, []string{name(49)}) {
		t.Fatalf("reused tail from a later name: %v", got)
	}
	if got := list(name(10)); len(got) != 40 {
		t.Fatalf("a listing from before the kept tail gave %d names, want 40", len(got))
	}
	// A new commit: listed by the very next listing.
	if err := os.WriteFile(filepath.Join(log, name(50)), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := list(name(48)); !slices.Equal(got, []string{name(48), name(49), name(50)}) {
		t.Fatalf("after a new commit: %v", got)
	}
	// A directory just changed is not kept (its next change could carry
	// the same coarse timestamp).
	if _, ok := s.tails.get(log, name(48)); ok {
		t.Fatal("a tail kept for a directory that just changed")
	}
	// A removal is seen too.
	if err := os.Remove(filepath.Join(log, name(49))); err != nil {
		t.Fatal(err)
	}
	if got := list(name(48)); !slices.Equal(got, []string{name(48), name(50)}) {
		t.Fatalf("after a removal: %v", got)
	}
}
