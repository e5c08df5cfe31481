package integration

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
	"github.com/deltafs/deltafs/serve"
)

// Two mounts in one process keep their caches apart: what one mount's
// reads keep (verdicts, footer patches, range plans) is in its caches
// only, and unmounting it frees them while the other's stay whole.
func TestTwoMountsShareNoCaches(t *testing.T) {
	testenv.RequireFUSE(t)
	mountOne := func() (*mount.Server, string) {
		cfg := mount.Config{Mountpoint: t.TempDir(), CacheDir: t.TempDir(), ReadOnly: true, PartitionColumns: true,
			Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
			Sources: []mount.Source{{Name: "p", URL: testenv.Fixture(t, "dat/basic_partitioned")},
				{Name: "cdf", URL: testenv.Fixture(t, "delta-kernel-rs/cdf-table-simple")}}}
		srv, err := mount.Mount(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Unmount() })
		return srv, cfg.Mountpoint
	}
	a, mntA := mountOne()
	b, mntB := mountOne()
	read := func(mnt string) {
		readAllFiles(t, filepath.Join(mnt, "p", "@v1"))
		if _, err := os.ReadDir(filepath.Join(mnt, "cdf", "@changes", "v0..v0")); err != nil {
			t.Fatal(err)
		}
	}
	read(mntA)
	ua := a.ServedCacheUsage()
	if ua.Verdicts == 0 || ua.Patches == 0 || a.PlanUsage().Plans == 0 {
		t.Fatalf("mount A after its reads: %+v, %+v; want verdicts, patches and a plan", ua, a.PlanUsage())
	}
	// (A mount makes its tables' shapes when it starts: those are its own.)
	if ub, pb := b.ServedCacheUsage(), b.PlanUsage(); ub.Verdicts != 0 || ub.Patches != 0 || ub.CopyEntries != 0 || pb.Plans != 0 {
		t.Fatalf("mount B holds %+v, %+v after only mount A read", ub, pb)
	}
	read(mntB)
	ub, pb := b.ServedCacheUsage(), b.PlanUsage()
	if err := a.Unmount(); err != nil {
		t.Fatal(err)
	}
	if ua, pa := a.ServedCacheUsage(), a.PlanUsage(); ua != (serve.CacheUsage{}) || pa.Plans != 0 || pa.Bytes != 0 {
		t.Errorf("mount A's caches after unmount: %+v, %+v; want them freed", ua, pa)
	}
	if ub2, pb2 := b.ServedCacheUsage(), b.PlanUsage(); ub2.Verdicts < ub.Verdicts || ub2.Patches < ub.Patches || pb2.Plans < pb.Plans {
		t.Errorf("mount B's caches after mount A's unmount: %+v, %+v; were %+v, %+v", ub2, pb2, ub, pb)
	}
	read(mntB)
}

// readAllFiles reads every regular file under dir.
func readAllFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
