package testenv

import (
	"os"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountFUSE mounts root at a fresh temp dir, unmounted when the test
// ends, and returns the mountpoint. Without FUSE the test is skipped (a
// failure under DELTAFS_REQUIRE_ALL).
func MountFUSE(t testing.TB, root fs.InodeEmbedder) string {
	t.Helper()
	RequireFUSE(t)
	mnt := t.TempDir()
	srv, err := fs.Mount(mnt, root, &fs.Options{MountOptions: fuse.MountOptions{
		FsName: "deltafs-test", DirectMount: os.Geteuid() == 0}})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return mnt
}

// DirNames returns the names in dir, sorted; the test fails when dir
// cannot be read.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
