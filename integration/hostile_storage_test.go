package integration

// Storage changed under a mount by someone hostile or careless: data
// files replaced by symbolic links, FIFOs and devices are refused (EIO,
// with the reason logged), never followed, opened or waited on.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// TestDataFilesThatAreNotRegularFiles: the log lists files that are now
// a symlink to a root-only file of the same size, a file under a
// symlinked partition directory, a FIFO and a character device (/dev/zero's
// numbers). Each read through the mount is EIO and returns none of the
// secret's bytes; the FIFO's read does not wait for a writer.
func TestDataFilesThatAreNotRegularFiles(t *testing.T) {
	root := testenv.CopyFixture(t, fixturePartitioned)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	snap := latestSnapshot(t, root)
	byDir := map[string][]string{} // partition dir -> files in it
	for rel := range liveFiles(t, snap) {
		byDir[filepath.Dir(rel)] = append(byDir[filepath.Dir(rel)], rel)
	}
	outside := t.TempDir()
	secretOf := func(size int64) string { // a root-only file of size bytes, outside the table
		p := filepath.Join(outside, "secret-"+time.Now().Format("150405.000000000"))
		if err := os.WriteFile(p, bytes.Repeat([]byte("S"), int(size)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	replace := func(rel string, make func(p string) error) string {
		p := filepath.Join(root, rel)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := make(p); err != nil {
			t.Fatalf("replace %s: %v", rel, err)
		}
		return rel
	}
	size := func(rel string) int64 { return liveFiles(t, snap)[rel].Add.Size }
	var cases []string
	// A data file that is a symlink to a secret of the same size.
	a := byDir["letter=a"][0]
	cases = append(cases, replace(a, func(p string) error { return os.Symlink(secretOf(size(a)), p) }))
	// A partition directory that is a symlink to a directory of secrets.
	b := byDir["letter=b"]
	evil := filepath.Join(outside, "letter=b")
	if err := os.Mkdir(evil, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, rel := range b {
		if err := os.Rename(secretOf(size(rel)), filepath.Join(evil, filepath.Base(rel))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(root, "letter=b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(evil, filepath.Join(root, "letter=b")); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, b...)
	// A FIFO.
	fifo := replace(byDir["letter=c"][0], func(p string) error { return syscall.Mkfifo(p, 0o644) })
	cases = append(cases, fifo)
	// A device with /dev/zero's numbers (root only).
	if os.Geteuid() == 0 {
		cases = append(cases, replace(byDir["letter=e"][0], func(p string) error {
			return syscall.Mknod(p, syscall.S_IFCHR|0o644, int(unixMkdev(1, 5)))
		}))
	}
	// Should a FIFO's read wait for a writer (the defect), open it for
	// writing ourselves once the reads are done, so the test fails
	// instead of hanging.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			if f, err := os.OpenFile(filepath.Join(root, fifo), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	}()
	for _, rel := range cases {
		data, err := os.ReadFile(filepath.Join(mnt, "t", "@latest", rel))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("read %s: %d bytes, %v; want EIO", rel, len(data), err)
		}
		if bytes.Contains(data, []byte("SSSS")) || (len(data) > 0 && bytes.Count(data, []byte{0}) == len(data)) {
			t.Errorf("read %s served the secret or the device's bytes", rel)
		}
	}
}

// unixMkdev is makedev(3).
func unixMkdev(major, minor uint64) uint64 {
	return (major&0xfff)<<8 | (minor & 0xff) | (major&^0xfff)<<32 | (minor&^0xff)<<12
}

// TestWarehouseChildNames: a local warehouse whose table directories are
// named with a tab, a newline and a "__0x41__" sequence (which gocloud's
// fileblob takes for an escape) serves each under its own name, with its
// rows; appends to them are refused up front, saying why, since their
// objects would be written under other names.
func TestWarehouseChildNames(t *testing.T) {
	wh := t.TempDir()
	names := []string{"tab\there", "new\nline", "t__0x41__x"}
	for _, n := range names {
		if err := os.Rename(testenv.CopyFixture(t, fixtureAppend), filepath.Join(wh, n)); err != nil {
			t.Fatal(err)
		}
	}
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{URL: wh}}})
	want := len(liveFiles(t, latestSnapshot(t, testenv.Fixture(t, fixtureAppend))))
	for _, n := range names {
		ents, err := os.ReadDir(filepath.Join(mnt, n, "@latest"))
		if err != nil || len(ents) != want {
			t.Errorf("%q/@latest: %d entries, %v; want %d", n, len(ents), err, want)
			continue
		}
		if _, err := os.ReadFile(filepath.Join(mnt, n, "@latest", ents[0].Name())); err != nil {
			t.Errorf("read %q/@latest/%s: %v", n, ents[0].Name(), err)
		}
		reason, err := os.ReadFile(filepath.Join(mnt, n, "inbox", "_deltafs_error.txt"))
		if err != nil || !bytes.Contains(reason, []byte("store")) {
			t.Errorf("%q/inbox/_deltafs_error.txt: %q, %v; want why appends are refused", n, reason, err)
		}
	}
}

// TestTableVanishedUnderMount: the table directory deleted, or its
// _delta_log moved away, while mounted. An inbox drop must not write a
// commit into the empty place (a log with no beginning), and the status
// file must say the table vanished rather than that all is well.
func TestTableVanishedUnderMount(t *testing.T) {
	for name, vanish := range map[string]func(root string) error{
		"table deleted": os.RemoveAll,
		"log moved away": func(root string) error {
			return os.Rename(filepath.Join(root, "_delta_log"), filepath.Join(filepath.Dir(root), "moved_log"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := testenv.CopyFixture(t, fixtureAppend)
			mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, Refresh: 100 * time.Millisecond})
			if _, err := os.ReadDir(filepath.Join(mnt, "t", "@latest")); err != nil {
				t.Fatal(err)
			}
			if err := vanish(root); err != nil {
				t.Fatal(err)
			}
			data := parquetBytes(t, []basicRow{{ptr("late"), ptr[int64](1), nil}})
			if err := os.WriteFile(filepath.Join(mnt, "t", "inbox", "late.parquet"), data, 0o644); err == nil {
				t.Errorf("an append to a vanished table succeeded")
			}
			if ents, err := os.ReadDir(filepath.Join(root, "_delta_log")); err == nil && len(ents) > 0 {
				t.Errorf("the append wrote %v into the vanished table's place", ents)
			}
			var last string
			ok := eventually(20*time.Second, func() bool {
				st, err := os.ReadFile(filepath.Join(mnt, ".deltafs-status.json"))
				var doc struct {
					Tables []struct {
						Name, RefreshError, Refused string
					}
				}
				if err != nil || json.Unmarshal(st, &doc) != nil || len(doc.Tables) != 1 {
					return false
				}
				last = doc.Tables[0].RefreshError + doc.Tables[0].Refused
				return strings.Contains(last, "vanished")
			})
			if !ok {
				t.Errorf("status file says %q, want that the table vanished", last)
			}
		})
	}
}
