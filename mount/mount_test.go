package mount

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// A mount that fails after the kernel took it (a regular file as the
// mountpoint) is undone: no dead fuse.deltafs mount stays on the file.
func TestFailedMountLeavesNoMount(t *testing.T) {
	testenv.RequireFUSE(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Mount(context.Background(), Config{
		Sources:    []Source{{Name: "t", URL: testenv.Fixture(t, "dat/basic_append")}},
		Mountpoint: file, ReadOnly: true, CacheDir: t.TempDir(),
	})
	if err == nil {
		t.Fatal("mount on a regular file succeeded")
	}
	info, rerr := os.ReadFile("/proc/self/mountinfo")
	if rerr != nil {
		testenv.Skip(t, "no /proc/self/mountinfo: %v", rerr)
	}
	if strings.Contains(string(info), " "+file+" ") {
		t.Errorf("mount on %s failed (%v) but is still mounted", file, err)
	}
}
