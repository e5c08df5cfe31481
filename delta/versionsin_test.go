package delta

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// countingReads counts ReadRange calls on a dirStore; with local set it
// declares its directory (LocalDirer), as a local table's store does.
type countingReads struct {
	dirStore
	local bool
	reads *atomic.Int32
}

func (c countingReads) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.dirStore.ReadRange(ctx, key, off, n)
}

func (c countingReads) LocalDir() string {
	if c.local {
		return c.root
	}
	return ""
}

// VersionsIn reads nothing: versions whose in-commit timestamps were not
// read are ErrTimeNotRead. Version reads the one asked for and, on a
// local table, the next ictReadAhead-1 in the same round (ls -l looks
// versions up in order); on a remote one only the one asked for.
func TestVersionTimesReadAheadLocally(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: 40, FilesPerCommit: 1, CheckpointEvery: 30, ICT: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, local := range []bool{true, false} {
		var reads atomic.Int32
		tbl := Open(countingReads{dirStore{root}, local, &reads}, Options{})
		if _, err := tbl.Latest(ctx); err != nil {
			t.Fatal(err)
		}
		before := reads.Load()
		if _, errs, err := tbl.VersionsIn(ctx, 0, 39); err != nil || !errors.Is(errs[3], ErrTimeNotRead) {
			t.Fatalf("local %v: VersionsIn before any read: %v, v3: %v; want ErrTimeNotRead", local, err, errs[3])
		}
		if n := reads.Load() - before; n != 0 {
			t.Fatalf("local %v: VersionsIn made %d reads", local, n)
		}
		if _, err := tbl.Version(ctx, 3); err != nil {
			t.Fatal(err)
		}
		infos, errs, err := tbl.VersionsIn(ctx, 0, 39)
		if err != nil {
			t.Fatal(err)
		}
		for i, info := range infos {
			v := int64(i)
			known := v == 3 || local && v > 3
			switch {
			case known && (errs[i] != nil || !info.ModTime.Equal(scalegen.CommitTime(v))):
				t.Errorf("local %v: v%d: %+v %v, want time %v", local, v, info, errs[i], scalegen.CommitTime(v))
			case !known && !errors.Is(errs[i], ErrTimeNotRead):
				t.Errorf("local %v: v%d: %+v %v, want ErrTimeNotRead", local, v, info, errs[i])
			}
		}
		// Locally the commits of the newest snapshot's segment (31-39) are
		// parsed already and read from memory.
		if n := reads.Load() - before; local && n < 2 || !local && n != 1 {
			t.Errorf("local %v: Version(3) made %d reads", local, n)
		}
	}
}
