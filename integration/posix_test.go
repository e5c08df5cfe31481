package integration

// POSIX behaviour of the read-only tree. go-fuse's posixtest suite writes
// the files it checks, so of its tests only ReadDirConsistency applies to
// snapshots as is; the read-only halves of the others (fd leaks, parallel
// opens, directory seeks, lseek, and every mutation refused with EROFS)
// are checked here on the same terms. See docs/reliability.md.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// posixFixture has partition directories and several files per version.
const posixFixture = fixtureDV

func mountPosix(t *testing.T) (mnt, snap string) {
	mnt = mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: testenv.Fixture(t, posixFixture)}}})
	return mnt, filepath.Join(mnt, "t", "@v15")
}

func TestPosixReadDirConsistency(t *testing.T) {
	mnt, snap := mountPosix(t)
	for _, dir := range []string{mnt, filepath.Join(mnt, "t"), snap, filepath.Join(snap, "part=0")} {
		t.Run(filepath.Base(dir), func(t *testing.T) { posixtest.ReadDirConsistency(t, dir) })
	}
}

// TestPosixFdLeak is posixtest.FdLeak without the write: 100 reads of a
// file leave no descriptor open.
func TestPosixFdLeak(t *testing.T) {
	_, snap := mountPosix(t)
	file := firstRegular(t, filepath.Join(snap, "part=0"))
	before := openFds(t)
	for range 100 {
		if _, err := os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	}
	if after := openFds(t); after > before+15 {
		t.Errorf("%d descriptors open after 100 reads, %d before", after, before)
	}
}

func openFds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestPosixParallelOpen is posixtest.ParallelFileOpen read-only: many
// concurrent open/read/close of one file all see the same bytes.
func TestPosixParallelOpen(t *testing.T) {
	_, snap := mountPosix(t)
	file := firstRegular(t, filepath.Join(snap, "part=0"))
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				got, err := os.ReadFile(file)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("parallel read: %v, equal=%v", err, bytes.Equal(got, want))
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestPosixDirSeek is posixtest.DirSeek on an existing directory: reading
// a listing entry by entry, then seeking back to each recorded offset,
// continues with the same entry.
func TestPosixDirSeek(t *testing.T) {
	mnt, _ := mountPosix(t)
	dir := filepath.Join(mnt, "t") // @latest, the @vN, _history.jsonl
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	type entry struct {
		off  int64
		name string
	}
	var entries []entry
	buf := make([]byte, 64) // small: one entry per getdents
	for {
		off, _ := unix.Seek(fd, 0, 1)
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		entries = append(entries, entry{off, names[0]})
	}
	if len(entries) < 5 {
		t.Fatalf("only %d entries in %s", len(entries), dir)
	}
	for _, e := range entries {
		if _, err := unix.Seek(fd, e.off, 0); err != nil {
			t.Fatal(err)
		}
		n, err := unix.Getdents(fd, buf)
		if err != nil || n == 0 {
			t.Fatalf("after seek to %d: %d bytes, %v", e.off, n, err)
		}
		if _, _, names := unix.ParseDirent(buf[:n], -1, nil); names[0] != e.name {
			t.Errorf("seek to %d reads %q, first time %q", e.off, names[0], e.name)
		}
	}
}

// TestPosixLseek: SEEK_DATA/SEEK_HOLE on a file without holes (the
// read-only half of posixtest.LseekHoleSeeksToEOF and LseekEnxioCheck).
func TestPosixLseek(t *testing.T) {
	_, snap := mountPosix(t)
	f, err := os.Open(firstRegular(t, filepath.Join(snap, "part=0")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE); err != nil || off != fi.Size() {
		t.Errorf("SEEK_HOLE from 0 = %d, %v; want the size %d", off, err, fi.Size())
	}
	if off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA); err != nil || off != 0 {
		t.Errorf("SEEK_DATA from 0 = %d, %v; want 0", off, err)
	}
	if _, err := unix.Seek(int(f.Fd()), fi.Size()+1, unix.SEEK_DATA); !errors.Is(err, unix.ENXIO) {
		t.Errorf("SEEK_DATA past the end: %v, want ENXIO", err)
	}
}

// TestPosixSnapshotsRefuseMutation runs the mutations of posixtest
// (truncate, chmod, chown, utimes, rename, unlink, rmdir, mkdir, link,
// symlink, setxattr, open for writing) against a snapshot of a writable
// mount: deltafs itself, not an "ro" mount option, must refuse each with
// EROFS (or EPERM/EACCES where the kernel answers first).
func TestPosixSnapshotsRefuseMutation(t *testing.T) {
	root := testenv.CopyFixture(t, posixFixture)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	snap := filepath.Join(mnt, "t", "@v15")
	dir := filepath.Join(snap, "part=0")
	file := firstRegular(t, dir)
	ops := map[string]func() error{
		"truncate":   func() error { return os.Truncate(file, 0) },
		"chmod":      func() error { return os.Chmod(file, 0o600) },
		"chown":      func() error { return os.Chown(file, 1, 1) },
		"utimes":     func() error { return unix.UtimesNano(file, []unix.Timespec{{Sec: 1}, {Sec: 1}}) },
		"rename":     func() error { return os.Rename(file, file+".x") },
		"unlink":     func() error { return os.Remove(file) },
		"rmdir":      func() error { return unix.Rmdir(dir) },
		"mkdir":      func() error { return os.Mkdir(filepath.Join(snap, "d"), 0o755) },
		"link":       func() error { return os.Link(file, filepath.Join(dir, "l")) },
		"symlink":    func() error { return os.Symlink(file, filepath.Join(dir, "s")) },
		"setxattr":   func() error { return unix.Setxattr(file, "user.x", []byte("1"), 0) },
		"open write": func() error { f, err := os.OpenFile(file, os.O_WRONLY, 0); f.Close(); return err },
		"create":     func() error { return os.WriteFile(filepath.Join(dir, "new.parquet"), nil, 0o644) },
		"rename dir": func() error { return os.Rename(dir, filepath.Join(snap, "moved")) },
	}
	for name, op := range ops {
		err := op()
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.ENOTSUP) {
			t.Errorf("%s: %v, want EROFS", name, err)
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the file is gone after the refused mutations: %v", err)
	}
}
