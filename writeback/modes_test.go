package writeback

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Every file an append writes into a local table (data files copied as
// `deltafs append` does, owned files hard-linked as the inbox does,
// widened copies, footers rewritten under column mapping, checkpoints
// and _last_checkpoint) has mode 0666 less the umask and is read by
// another user (data files were 0600, so an engine running as
// a service account got EACCES on every file the log names).
func TestAppendedFilesFollowTheUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	check := func(t *testing.T, dir string) {
		t.Helper()
		var files []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
		for _, p := range files {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %v, want 0644 (0666 less umask 022)", p, fi.Mode().Perm())
			}
		}
		readAsNobody(t, dir, files)
	}

	t.Run("copied and linked", func(t *testing.T) {
		dir := testTable{schema: structSchema(field("id", `"long"`, true, ""))}.create(t)
		c := newCommitter(t, dir)
		src := writeParquet(t, "copied.parquet", []idRow{{ID: ptr[int64](1)}})
		os.Chmod(src, 0o600) // the user's own private file: the table's copy follows the umask
		if _, err := c.Append(ctx, []File{{LocalPath: src, Name: "copied.parquet"}}); err != nil {
			t.Fatalf("append: %v", err)
		}
		private := t.TempDir() // like the inbox's staging dir (0700)
		owned := filepath.Join(private, "staged.parquet")
		data, _ := os.ReadFile(writeParquet(t, "owned.parquet", []idRow{{ID: ptr[int64](2)}}))
		if err := os.WriteFile(owned, data, 0o666); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Append(ctx, []File{{LocalPath: owned, Name: "owned.parquet", Owned: true}}); err != nil {
			t.Fatalf("append owned: %v", err)
		}
		// Enough commits for a checkpoint and _last_checkpoint.
		for i := range 9 {
			src := writeParquet(t, fmt.Sprintf("f%d.parquet", i), []idRow{{ID: ptr(int64(i))}})
			if _, err := c.Append(ctx, []File{{LocalPath: src, Name: "f.parquet"}}); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
		c.WaitCheckpoints()
		if _, err := os.Stat(filepath.Join(dir, "_delta_log", "_last_checkpoint")); err != nil {
			t.Fatalf("no checkpoint after 11 commits: %v", err)
		}
		check(t, dir)
	})
	t.Run("widened", func(t *testing.T) {
		dir := testTable{schema: structSchema(field("id", `"long"`, true, ""))}.create(t)
		c := New(openTable(t, dir), Options{EngineInfo: "deltafs/test", TempDir: t.TempDir()})
		src := writeParquet(t, "narrow.parquet", []int32IDRow{{ID: ptr[int32](7)}})
		if _, err := c.Append(ctx, []File{{LocalPath: src, Name: "narrow.parquet"}}); err != nil {
			t.Fatalf("append: %v", err)
		}
		check(t, dir)
	})
	t.Run("column mapping", func(t *testing.T) {
		dir := testTable{protocol: `{"minReaderVersion":2,"minWriterVersion":5}`,
			config: map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"},
			schema: structSchema(field("id", `"long"`, true, `{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-5f0a"}`))}.create(t)
		src := writeParquet(t, "ids.parquet", []idRow{{ID: ptr[int64](41)}})
		if _, err := newCommitter(t, dir).Append(ctx, []File{{LocalPath: src, Name: "ids.parquet"}}); err != nil {
			t.Fatalf("append: %v", err)
		}
		check(t, dir)
	})
}

// readAsNobody reads every file of files (under dir) in a child process
// running as nobody, making dir and its parents traversable first.
func readAsNobody(t *testing.T, dir string, files []string) {
	t.Helper()
	for d := dir; d != "/" && strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	cmd := exec.Command("sh", append([]string{"-c", `for f; do cat "$f" > /dev/null || exit 1; done`, "sh"}, files...)...)
	testenv.AsUser(t, cmd, testenv.Nobody, testenv.Nobody)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("reading the table's files as nobody: %v: %s", err, out)
	}
}
