package powerfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/durable"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// mounted serves f on a temp dir; remount unmounts, applies a power loss
// and mounts again.
type mounted struct {
	t   *testing.T
	f   *FS
	dir string
	srv interface{ Unmount() error }
}

func mountFS(t *testing.T, f *FS) *mounted {
	t.Helper()
	testenv.RequireFUSE(t)
	m := &mounted{t: t, f: f, dir: t.TempDir()}
	m.mount()
	t.Cleanup(func() {
		if m.srv != nil {
			m.srv.Unmount()
		}
	})
	return m
}

func (m *mounted) mount() {
	srv, err := m.f.Mount(m.dir)
	if err != nil {
		m.t.Fatalf("mount powerfs: %v", err)
	}
	m.srv = srv
}

func (m *mounted) loseAndRemount() {
	m.t.Helper()
	m.f.CutPower()
	if err := m.srv.Unmount(); err != nil {
		m.t.Fatalf("unmount powerfs: %v", err)
	}
	m.srv = nil
	m.f.PowerLoss()
	m.mount()
}

func (m *mounted) path(p string) string { return filepath.Join(m.dir, p) }

func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPowerLossModel checks each rule of the model on a real mount: what
// was fsynced (bytes and names) survives, what was not is gone.
func TestPowerLossModel(t *testing.T) {
	m := mountFS(t, New())
	body := bytes.Repeat([]byte("durable "), 40000) // 320 KB: several WRITE requests

	writeFile(t, m.path("synced-no-dirsync"), body, true)
	if err := durable.SyncDir(m.dir); err != nil { // makes the name "synced-no-dirsync" durable
		t.Fatal(err)
	}
	// durable.Write makes d (fsyncing the root) and d/durable durable.
	if _, err := durable.Write(m.path("d/durable"), bytes.NewReader(body), durable.Exclusive); err != nil {
		t.Fatal(err)
	}
	writeFile(t, m.path("synced-no-dirsync"), []byte("overwritten, unsynced"), false)
	writeFile(t, m.path("name-only"), body, false)
	writeFile(t, m.path("bytes-only"), body, true)
	if err := os.Mkdir(m.path("newdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, m.path("newdir/f"), body, true)
	if err := durable.SyncDir(m.path("newdir")); err != nil { // but not its parent
		t.Fatal(err)
	}
	m.loseAndRemount()

	if got, err := os.ReadFile(m.path("synced-no-dirsync")); err != nil || !bytes.Equal(got, body) {
		t.Errorf("a file fsynced with its directory, then overwritten without fsync: %d bytes, %v; want its fsynced %d bytes", len(got), err, len(body))
	}
	if _, err := os.Stat(m.path("name-only")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file created after the last directory fsync survived: %v", err)
	}
	if _, err := os.Stat(m.path("bytes-only")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file fsynced, its directory not, survived: %v", err)
	}
	if _, err := os.Stat(m.path("newdir")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory whose parent was not fsynced after mkdir survived: %v", err)
	}
	if got, err := os.ReadFile(m.path("d/durable")); err != nil || !bytes.Equal(got, body) {
		t.Errorf("durable.Write's file after a power loss: %d bytes, %v; want %d", len(got), err, len(body))
	}
	s := m.f.Stats()
	if s.Losses != 1 || s.LostData == 0 || s.LostNames == 0 {
		t.Errorf("stats after one loss: %+v", s)
	}
}

// TestPowerLossNames checks links, renames and unlinks: a name change
// survives only with its directory's fsync, an unsynced file comes back
// empty under a durable name, and an unlink not made durable is undone.
func TestPowerLossNames(t *testing.T) {
	m := mountFS(t, New())
	writeFile(t, m.path("a"), []byte("A"), true)
	writeFile(t, m.path("empty-later"), []byte("not synced"), false)
	writeFile(t, m.path("gone"), []byte("G"), true)
	if err := durable.SyncDir(m.dir); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Link(m.path("a"), m.path("a-link")))
	must(os.Rename(m.path("gone"), m.path("renamed")))
	must(os.Remove(m.path("a")))
	m.loseAndRemount()

	for name, want := range map[string]string{"a": "A", "gone": "G", "empty-later": ""} {
		if got, err := os.ReadFile(m.path(name)); err != nil || string(got) != want {
			t.Errorf("%s after the loss: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"a-link", "renamed"} {
		if _, err := os.Stat(m.path(name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s (made after the last directory fsync) survived: %v", name, err)
		}
	}
}

// TestArmFailsRequests checks that an armed loss fires at the chosen
// mutating request and that every request fails with EIO after it.
func TestArmFailsRequests(t *testing.T) {
	m := mountFS(t, New())
	m.f.Arm(3) // create, write, then the fsync fails
	f, err := os.Create(m.path("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync at the armed request: %v, want EIO", err)
	}
	if !m.f.Down() {
		t.Fatal("the FS is not down after the armed request")
	}
	if _, err := os.ReadDir(m.dir); !errors.Is(err, syscall.EIO) {
		t.Errorf("readdir with the power off: %v, want EIO", err)
	}
}
