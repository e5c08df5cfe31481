package nodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/scalegen"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// versionCounter counts the one-version lookups a table directory makes
// through its Table (each is a LOOKUP of an @vN the kernel had no
// attributes for).
type versionCounter struct {
	Table
	versions atomic.Int32
}

func (c *versionCounter) Version(ctx context.Context, v int64) (delta.VersionInfo, error) {
	c.versions.Add(1)
	return c.Table.Version(ctx, v)
}

// `ls -l` of a long history: READDIRPLUS carries each @vN's attributes
// (its in-commit timestamp as mtime), so stat-ing every entry after
// listing sends no LOOKUP per version. The old stream left @vN without
// attributes: one LOOKUP, and one Version call, per version.
func TestListingCarriesVersionAttributes(t *testing.T) {
	testenv.RequireFUSE(t)
	const commits = 700 // more than two batches of plusBatch
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: commits, FilesPerCommit: 1, CheckpointEvery: 300, ICT: true}); err != nil {
		t.Fatal(err)
	}
	st, err := blobstore.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	vc := &versionCounter{Table: delta.Open(st, delta.Options{})}
	d := NewTableDir(NewEnv(Options{LongTimeout: time.Hour}), "t", vc, nil)
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mountDirs(t, d), "t")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := vc.versions.Load()
	seen := 0
	for _, e := range entries {
		var v int64
		if _, err := fmt.Sscanf(e.Name(), "@v%d", &v); err != nil {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("lstat %s: %v", e.Name(), err)
		}
		if want := scalegen.CommitTime(v); !fi.ModTime().Equal(want) || !fi.IsDir() {
			t.Fatalf("%s: mtime %v dir %v, want %v and a directory", e.Name(), fi.ModTime(), fi.IsDir(), want)
		}
		seen++
	}
	if seen != commits {
		t.Fatalf("listed %d versions, want %d", seen, commits)
	}
	if n := vc.versions.Load() - before; n != 0 {
		t.Errorf("stat of %d listed versions made %d LOOKUPs of a version, want 0", commits, n)
	}
}
