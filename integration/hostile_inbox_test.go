package integration

// The inbox under a full disk: staged files are bounded by --cache-size
// and by the space of the cache dir's file system; either way the write
// and the close say ENOSPC, _status.jsonl says why, and the table is
// unchanged.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// stageTooMuch writes size bytes into inbox/name in 64 KiB writes and
// checks that a write fails with ENOSPC, that close() says ENOSPC too and
// that the status file records it naming reason.
func stageTooMuch(t *testing.T, root, tdir, name string, size int, reason string) {
	t.Helper()
	before := latestSnapshot(t, root).Version()
	f, err := os.Create(filepath.Join(tdir, "inbox", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var werr error
	for n := 0; n < size && werr == nil; n += len(chunk) {
		_, werr = f.Write(chunk)
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Errorf("writing %d bytes: %v, want ENOSPC", size, werr)
	}
	if err := f.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("close of the cut-short file: %v, want ENOSPC", err)
	}
	ev := inboxStatus(t, tdir)
	if len(ev) == 0 || ev[len(ev)-1].Errno != "ENOSPC" || !strings.Contains(ev[len(ev)-1].Error, reason) {
		t.Errorf("status %+v, want ENOSPC naming %q last", ev, reason)
	}
	if v := latestSnapshot(t, root).Version(); v != before {
		t.Errorf("table moved from version %d to %d", before, v)
	}
}

// TestInboxCacheSizeBoundsStaging: staged files count against
// --cache-size; what is refused gives its bytes back, so a small file
// still commits afterwards.
func TestInboxCacheSizeBoundsStaging(t *testing.T) {
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{CacheSize: 256 << 10})
	stageTooMuch(t, root, tdir, "big.parquet", 1<<20, "--cache-size")
	v := latestSnapshot(t, root).Version()
	data := parquetBytes(t, []basicRow{{ptr("small"), ptr[int64](1), nil}})
	if err := os.WriteFile(filepath.Join(tdir, "inbox", "small.parquet"), data, 0o644); err != nil {
		t.Fatalf("small file after the refusal: %v", err)
	}
	if got := latestSnapshot(t, root).Version(); got != v+1 {
		t.Errorf("version %d after the small file, want %d", got, v+1)
	}
}

// TestInboxStagingDiskFull: the cache dir on a full file system (a 512 KiB
// tmpfs): the write's ENOSPC is the close's, not EINVAL for a truncated
// Parquet file.
func TestInboxStagingDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "mounting a small tmpfs needs root")
	}
	cache := t.TempDir()
	if err := syscall.Mount("tmpfs", cache, "tmpfs", 0, "size=512k"); err != nil {
		testenv.Skip(t, "mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(cache, syscall.MNT_DETACH) })
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{CacheDir: cache})
	stageTooMuch(t, root, tdir, "big.parquet", 2<<20, "no space left on device")
}

// TestInboxPartitionNamesStoredAsLogged: partition directories whose
// value is ".", ".." or ends in ".." are refused by mkdir; a value the
// storage would store under another name (gocloud's fileblob takes
// "__0x41__" for an escape) is refused by close(); nothing of either
// reaches the table, and every file the log names is where it says.
func TestInboxPartitionNamesStoredAsLogged(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	before := latestSnapshot(t, root).Version()
	inbox := filepath.Join(tdir, "inbox")
	for _, name := range []string{"letter=.", "letter=..", "letter=a.."} {
		if err := os.Mkdir(filepath.Join(inbox, name), 0o755); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("mkdir %s: %v, want EINVAL", name, err)
		}
	}
	leaf := filepath.Join(inbox, "letter=t__0x41__x")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	data := parquetBytes(t, []basicDataRow{{ptr[int64](1), ptr(1.0)}})
	if err := os.WriteFile(filepath.Join(leaf, "f.parquet"), data, 0o644); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("close of a file whose key would be rewritten: %v, want EINVAL", err)
	}
	ev := inboxStatus(t, tdir)
	if len(ev) == 0 || !strings.Contains(ev[len(ev)-1].Error, "__0x..__") {
		t.Errorf("status %+v, want the reason last", ev)
	}
	snap := latestSnapshot(t, root)
	if snap.Version() != before {
		t.Errorf("table moved from version %d to %d", before, snap.Version())
	}
	files, err := snap.LiveFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f.Key))); err != nil {
			t.Errorf("the log names %s, not stored there: %v", f.Key, err)
		}
	}
}
