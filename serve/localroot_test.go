package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/delta"
)

// A local root opens regular files below it and refuses everything else
// with its reason, without opening it: a symbolic link, a path through
// one, a FIFO, a directory, a path leaving the table, a missing file.
func TestLocalRootRefuses(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "p=1"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "p=1", "a.parquet"), []byte("regular"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret.parquet"), []byte("secret"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret.parquet"), filepath.Join(dir, "link.parquet")))
	must(os.Symlink(outside, filepath.Join(dir, "p=2")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.parquet"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "dir.parquet"), 0o755))
	r := &localRoot{dir: dir}
	fd, size, err := r.openFD("p=1/a.parquet")
	if err != nil || size != int64(len("regular")) {
		t.Fatalf("regular file: size %d, %v", size, err)
	}
	buf := make([]byte, size)
	if _, err := fdReader(fd).ReadAt(buf, 0); err != nil || string(buf) != "regular" {
		t.Errorf("read %q, %v", buf, err)
	}
	unix.Close(fd)
	for key, want := range map[string]string{
		"link.parquet":        "symbolic link",
		"p=2/secret.parquet":  "symbolic link",
		"fifo.parquet":        "a FIFO",
		"dir.parquet":         "a directory",
		"../x/secret.parquet": "leaves the table",
		"missing.parquet":     delta.ErrNotExist.Error(),
	} {
		fd, _, err := r.openFD(key)
		if err == nil {
			unix.Close(fd)
			t.Errorf("%s: opened", key)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want the key and %q", key, err, want)
		}
	}
	if _, _, err := r.openFD("missing.parquet"); !errors.Is(err, delta.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

// A table directory replaced under the mount is followed: once
// rootRecheck has passed, files are opened in the new directory.
func TestLocalRootFollowsReplacement(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "t")
	for _, d := range []string{dir, dir + ".new"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "a.parquet"), []byte(filepath.Base(d)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &localRoot{dir: dir}
	read := func() string {
		t.Helper()
		fd, size, err := r.openFD("a.parquet")
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		b := make([]byte, size)
		if _, err := fdReader(fd).ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != "t" {
		t.Fatalf("read %q from the first directory", got)
	}
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".new", dir); err != nil {
		t.Fatal(err)
	}
	time.Sleep(rootRecheck + 100*time.Millisecond)
	if got := read(); got != "t.new" {
		t.Errorf("read %q after the directory was replaced, want the new one's", got)
	}
}
