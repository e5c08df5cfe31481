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

// Version reads the in-commit timestamp asked for and, on a local table,
// those of the next ictReadAhead-1 versions in the same round (ls -l
// looks versions up in order); on a remote table only the one asked for.
// VersionsIn reads a local table's as Version does, and a remote table's
// not at all: those not read before are ErrTimeNotRead.
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
		if _, err := tbl.Version(ctx, 3); err != nil {
			t.Fatal(err)
		}
		// Locally the commits of the newest snapshot's segment (31-39) are
		// parsed already and read from memory.
		if n := reads.Load() - before; local && n < 2 || !local && n != 1 {
			t.Errorf("local %v: Version(3) made %d reads", local, n)
		}
		before = reads.Load()
		infos, errs, err := tbl.VersionsIn(ctx, 3, 39)
		if err != nil {
			t.Fatal(err)
		}
		if n := reads.Load() - before; n != 0 {
			t.Errorf("local %v: VersionsIn after the read-ahead made %d reads", local, n)
		}
		for i, info := range infos {
			v := int64(i) + 3
			known := v == 3 || local || v > 30 // the segment's commits are parsed
			switch {
			case known && (errs[i] != nil || !info.ModTime.Equal(scalegen.CommitTime(v))):
				t.Errorf("local %v: v%d: %+v %v, want time %v", local, v, info, errs[i], scalegen.CommitTime(v))
			case !known && !errors.Is(errs[i], ErrTimeNotRead):
				t.Errorf("local %v: v%d: %+v %v, want ErrTimeNotRead", local, v, info, errs[i])
			}
		}
	}
}
