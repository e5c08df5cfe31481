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

// VersionsIn answers with the in-commit timestamps of a local table,
// read once each, and on a remote table reads no commit: versions whose
// timestamps were not read are ErrTimeNotRead, those read before (by
// Version) are answered.
func TestVersionsInReadsTimestampsOnlyLocally(t *testing.T) {
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
		if _, err := tbl.Version(ctx, 3); err != nil { // read before: known either way
			t.Fatal(err)
		}
		before := reads.Load()
		infos, errs, err := tbl.VersionsIn(ctx, 0, 39)
		if err != nil || len(infos) != 40 {
			t.Fatalf("local %v: VersionsIn: %d infos, %v", local, len(infos), err)
		}
		for i, info := range infos {
			v := int64(i)
			switch {
			case local || v == 3:
				if errs[i] != nil || info.Version != v || !info.ModTime.Equal(scalegen.CommitTime(v)) {
					t.Errorf("local %v: v%d: %+v %v, want time %v", local, v, info, errs[i], scalegen.CommitTime(v))
				}
			case !errors.Is(errs[i], ErrTimeNotRead):
				t.Errorf("remote: v%d: %+v %v, want ErrTimeNotRead", v, info, errs[i])
			}
		}
		got := reads.Load() - before
		if local && got == 0 || !local && got != 0 {
			t.Errorf("local %v: VersionsIn made %d reads", local, got)
		}
	}
}
