package integration

// One table's poison stays in that table: a hostile
// checkpoint or commit makes its table refused with the reason, at mount
// and at refresh alike, while the mount's other tables are served and
// appended to.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/hostilepq"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// deepCheckpoint is a checkpoint file whose schema is a 100,000-deep
// chain of groups (parquet-go asked for 80 GB building its columns).
func deepCheckpoint() []byte {
	return hostilepq.File{DeepChain: 100_000, Columns: []hostilepq.Column{{Name: "txn", Type: format.Int64,
		Pages: []hostilepq.Page{hostilepq.Int64Page(false, hostilepq.Ptrs(1, nil))}}}}.Bytes()
}

// deepCommit is a commit line nested 100,000 arrays deep.
func deepCommit() []byte {
	return []byte(`{"commitInfo":{"x":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "}}\n")
}

// poisonMount mounts copies of dat/basic_append as a and b and returns
// their roots and the mountpoint.
func poisonMount(t *testing.T, poison func(root string)) (string, string, string) {
	a, b := testenv.CopyFixture(t, fixtureAppend), testenv.CopyFixture(t, fixtureAppend)
	if poison != nil {
		poison(a)
	}
	mnt := mountFS(t, mount.Config{Refresh: 100 * time.Millisecond,
		Sources: []mount.Source{{Name: "a", URL: a}, {Name: "b", URL: b}}})
	return a, b, mnt
}

// checkServed: b reads and takes an append.
func checkServed(t *testing.T, mnt string) {
	t.Helper()
	if _, err := os.ReadDir(filepath.Join(mnt, "b", "@latest")); err != nil {
		t.Fatalf("the healthy table: %v", err)
	}
	good := parquetBytes(t, []basicDataRow{{ptr[int64](1), ptr(1.0)}})
	if err := os.WriteFile(filepath.Join(mnt, "b", "inbox", "ok.parquet"), good, 0o644); err != nil {
		t.Fatalf("append to the healthy table: %v", err)
	}
}

// waitRefused waits for table's _deltafs_error.txt to name want.
func waitRefused(t *testing.T, dir, want string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "_deltafs_error.txt"))
		last = fmt.Sprint(string(b), err)
		if err == nil && strings.Contains(string(b), want) {
			return
		}
	}
	t.Fatalf("%s/_deltafs_error.txt: %s, want it naming %q", dir, last, want)
}

func TestPoisonStaysInItsTable(t *testing.T) {
	writeLog := func(root string, name string, data []byte) {
		if err := os.WriteFile(filepath.Join(root, "_delta_log", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp := filepath.Base(delta.CheckpointKey(1))
	for _, tc := range []struct {
		name   string
		poison func(t *testing.T, root string)
		want   string // in the reason at mount
		// refreshWant is in the reason after a refresh; "" when the table
		// stays served at refresh (a checkpoint that does not read is
		// skipped while the state before it is cached).
		refreshWant string
	}{
		// The commits before the checkpoint are gone (log cleanup): only
		// the checkpoint can give the table.
		{"checkpoint", func(t *testing.T, root string) {
			writeLog(root, cp, deepCheckpoint())
			writeLog(root, "_last_checkpoint", []byte(`{"version":1,"size":3}`))
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(delta.CommitKey(0)))); err != nil {
				t.Fatal(err)
			}
		}, "schema nested deeper than 64 levels", ""},
		{"commit", func(t *testing.T, root string) { writeLog(root, filepath.Base(delta.CommitKey(2)), deepCommit()) },
			filepath.Base(delta.CommitKey(2)), filepath.Base(delta.CommitKey(2))},
	} {
		t.Run(tc.name+"/at mount", func(t *testing.T) {
			_, _, mnt := poisonMount(t, func(root string) { tc.poison(t, root) })
			waitRefused(t, filepath.Join(mnt, "a"), tc.want)
			checkServed(t, mnt)
		})
		t.Run(tc.name+"/at refresh", func(t *testing.T) {
			a, _, mnt := poisonMount(t, nil)
			if _, err := os.ReadDir(filepath.Join(mnt, "a", "@latest")); err != nil {
				t.Fatal(err)
			}
			tc.poison(t, a)
			if tc.refreshWant == "" {
				time.Sleep(time.Second) // ten refreshes
				if _, err := os.ReadDir(filepath.Join(mnt, "a", "@latest")); err != nil {
					t.Fatalf("the table after a bad checkpoint appeared: %v", err)
				}
			} else {
				waitRefused(t, filepath.Join(mnt, "a"), tc.refreshWant)
			}
			checkServed(t, mnt)
		})
	}
}
