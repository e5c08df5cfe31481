package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// deltafs ls prints the size stat(2) gives through a mount: for DV'd
// files and column-mapped tables the rewritten size (JSON servedSize, the
// SIZE column), with the stored size kept in JSON size.
func TestLsSizeIsWhatTheMountServes(t *testing.T) {
	testenv.RequireFUSE(t)
	fx := testenv.Fixtures(t)
	tables := map[string]string{
		"dv":    filepath.Join(fx, "delta-kernel-rs/golden-dv-partitioned-with-checkpoint/table"),
		"dvmap": filepath.Join(fx, "delta-kernel-rs/golden-dv-with-columnmapping/table"),
	}
	cfg := mount.Config{Mountpoint: t.TempDir(), CacheDir: t.TempDir(), ReadOnly: true, Logger: slog.New(slog.DiscardHandler)}
	for name, url := range tables {
		cfg.Sources = append(cfg.Sources, mount.Source{Name: name, URL: url})
	}
	srv, err := mount.Mount(context.Background(), cfg)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	for name, url := range tables {
		out, stderr, code := deltafs(t, "ls", "--json", url)
		if code != 0 {
			t.Fatalf("ls %s: exit %d: %s", name, code, stderr)
		}
		// The mount names partition directories by logical column names,
		// ls by the stored paths: match files by base name.
		mounted := map[string]int64{}
		err := filepath.WalkDir(filepath.Join(cfg.Mountpoint, name, "@latest")+"/", func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				fi, err := os.Stat(p)
				if err != nil {
					return err
				}
				mounted[d.Name()] = fi.Size()
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		differ := 0
		for _, e := range jsonLines(t, out) {
			path := e["path"].(string)
			stored := int64(e["size"].(float64))
			got, ok := e["servedSize"].(float64)
			if !ok {
				t.Fatalf("%s: %s: no servedSize in %v", name, path, e)
			}
			size, ok := mounted[filepath.Base(path)]
			if !ok {
				t.Fatalf("%s: %s not in the mount (%d files there)", name, path, len(mounted))
			}
			if int64(got) != size {
				t.Errorf("%s: %s: ls says servedSize %d, stat through the mount %d (stored %d)", name, path, int64(got), size, stored)
			}
			if size != stored {
				differ++
			}
		}
		if differ == 0 {
			t.Errorf("%s: no file served with another size than stored: the test shows nothing", name)
		}
		human, stderr, code := deltafs(t, "ls", url)
		if code != 0 {
			t.Fatalf("ls %s: exit %d: %s", name, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(human), "\n")
		if !strings.HasPrefix(strings.TrimSpace(lines[0]), "SIZE ") {
			t.Errorf("%s: header %q, want SIZE first", name, lines[0])
		}
		for _, l := range lines[1 : len(lines)-1] {
			f := strings.Fields(l)
			if n, _ := strconv.ParseInt(f[0], 10, 64); n != mounted[filepath.Base(f[3])] {
				t.Errorf("%s: %q: SIZE %d, the mount serves %d", name, l, n, mounted[filepath.Base(f[3])])
			}
		}
	}
}
