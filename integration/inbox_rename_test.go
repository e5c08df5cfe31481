package integration

// Tools that write a temporary name and rename it into place, through a
// real mount of a copied fixture table: rsync, coreutils mv, a Go program
// doing write-temp-fsync-rename, DuckDB. A temporary name is staged, not
// committed; the rename commits it and returns once the version exists;
// a refused rename changes nothing in the table and leaves the file under
// its temporary name.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// localParquet writes rows as a Parquet file outside the mount.
func localParquet[T any](t *testing.T, name string, rows []T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, parquetBytes(t, rows), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a command, returning its combined output and error.
func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// commitAdds returns the number of add actions of a commit file.
func commitAdds(t *testing.T, root string, version int64) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", version)))
	if err != nil {
		t.Fatalf("commit %d: %v", version, err)
	}
	adds := 0
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var a struct {
			Add *json.RawMessage `json:"add"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("commit %d: %v", version, err)
		}
		if a.Add != nil {
			adds++
		}
	}
	return adds
}

// checkUnchanged fails unless the table's log ends at before's version.
func checkUnchanged(t *testing.T, root string, before *delta.Snapshot) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", before.Version()+1))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("commit %d exists (%v): the table changed", before.Version()+1, err)
	}
	after := latestSnapshot(t, root)
	if after.Version() != before.Version() || len(liveFiles(t, after)) != len(liveFiles(t, before)) {
		t.Errorf("table changed: version %d -> %d", before.Version(), after.Version())
	}
}

// checkCommitted checks that version v+1 exists with one add, that the
// status file names it for file, and that the rows read back.
func checkCommitted(t *testing.T, c inboxCase, root, tdir, file string, before *delta.Snapshot, data []byte) {
	t.Helper()
	v := before.Version()
	ev := inboxStatus(t, tdir)
	if len(ev) == 0 || ev[len(ev)-1].Version == nil || *ev[len(ev)-1].Version != v+1 || ev[len(ev)-1].File != file {
		t.Fatalf("status = %+v, want the commit of %s as version %d last", ev, file, v+1)
	}
	if got, err := os.Readlink(filepath.Join(tdir, "@latest")); err != nil || got != fmt.Sprintf("@v%d", v+1) {
		t.Errorf("@latest -> %q, %v right after the rename; want @v%d", got, err, v+1)
	}
	if _, err := os.Stat(filepath.Join(tdir, "inbox", file)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat of the committed %s: %v, want ENOENT", file, err)
	}
	if n := commitAdds(t, root, v+1); n != 1 {
		t.Errorf("commit %d has %d adds, want 1", v+1, n)
	}
	checkRows(t, c, tdir, v, data)
	checkNewLiveFile(t, root, before, c.parts)
}

func TestInboxRsync(t *testing.T) {
	rsync := testenv.Tool(t, "rsync")
	if rsync == "" {
		return
	}
	c := inboxCases["unpartitioned"]
	root, tdir := mountCopy(t, c.fixture, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	data := c.data(t)
	src := filepath.Join(t.TempDir(), "new.parquet")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := latestSnapshot(t, root)
	// -a: rsync also sets the temporary file's mode and times before the rename.
	if out, err := run(t, rsync, "-a", src, filepath.Join(inbox, "r1.parquet")); err != nil {
		t.Fatalf("rsync: %v\n%s", err, out)
	}
	checkCommitted(t, c, root, tdir, "r1.parquet", before, data)
	if names := readDirNames(t, inbox); !slices.Equal(names, []string{"_status.jsonl"}) {
		t.Errorf("inbox lists %v after rsync, want only _status.jsonl", names)
	}

	// A file the table refuses: rsync fails (its rename does), the table
	// is unchanged, the reason is in the status file.
	before = latestSnapshot(t, root)
	bad := localParquet(t, "bad.parquet", []wrongRow{{1}})
	out, err := run(t, rsync, "-a", bad, filepath.Join(inbox, "bad.parquet"))
	if err == nil {
		t.Fatalf("rsync of a refused file succeeded:\n%s", out)
	}
	if !strings.Contains(out, "Invalid argument") {
		t.Errorf("rsync says %q, want the rename's EINVAL", out)
	}
	ev := inboxStatus(t, tdir)
	if last := ev[len(ev)-1]; last.File != "bad.parquet" || last.Errno != "EINVAL" || !strings.Contains(last.Error, "nope") {
		t.Errorf("last status %+v, want EINVAL for bad.parquet naming column nope", last)
	}
	checkUnchanged(t, root, before)
}

func TestInboxMvFromTemporaryName(t *testing.T) {
	for _, name := range []string{"unpartitioned", "partitioned"} {
		t.Run(name, func(t *testing.T) {
			c := inboxCases[name]
			root, tdir := mountCopy(t, c.fixture, mount.Config{})
			inbox := filepath.Join(tdir, "inbox")
			dst := filepath.Join(inbox, c.dir)
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			data := c.data(t)
			src := filepath.Join(t.TempDir(), "new.parquet")
			if err := os.WriteFile(src, data, 0o644); err != nil {
				t.Fatal(err)
			}
			before := latestSnapshot(t, root)
			// The temporary name sits at the inbox root, even for the
			// partitioned table: the rename's target decides the partition.
			tmp := filepath.Join(inbox, "x.parquet.tmp")
			if out, err := run(t, "cp", src, tmp); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			checkUnchanged(t, root, before)
			if st, err := os.Stat(tmp); err != nil || st.Size() != int64(len(data)) {
				t.Fatalf("staged temporary file: %v, %v; want %d bytes", st, err, len(data))
			}
			if p := pendingFiles(t, filepath.Dir(tdir)); len(p) != 1 || p[0].File != "x.parquet.tmp" || !p[0].Temporary {
				t.Errorf(".deltafs-status.json lists pending %+v, want x.parquet.tmp, temporary", p)
			}
			if out, err := run(t, "mv", tmp, filepath.Join(dst, "x.parquet")); err != nil {
				t.Fatalf("mv: %v\n%s", err, out)
			}
			checkCommitted(t, c, root, tdir, filepath.Join(c.dir, "x.parquet"), before, data)
			if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("temporary name after the commit: %v", err)
			}
		})
	}
}

// TestInboxMvRefused: a rename the table refuses fails with the errno of
// a refused close() and the reason; the file stays under its temporary
// name, the table is unchanged, and after a fix the rename commits.
func TestInboxMvRefused(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	leaf := filepath.Join(inbox, "letter=a")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	before, files := latestSnapshot(t, root), tableFiles(t, root)
	tmp := filepath.Join(inbox, ".x.tmp")
	if err := os.WriteFile(tmp, parquetBytes(t, []wrongRow{{1}}), 0o644); err != nil {
		t.Fatalf("write a temporary name: %v", err)
	}
	// coreutils mv prints EINVAL as "cannot move ... to a subdirectory of
	// itself"; the errno itself is checked with rename(2) below.
	if out, err := run(t, "mv", tmp, filepath.Join(leaf, "x.parquet")); err == nil {
		t.Errorf("mv of a refused file succeeded: %q", out)
	}
	if err := os.Rename(tmp, filepath.Join(leaf, "x.parquet")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("rename of a refused file: %v, want EINVAL", err)
	}
	ev := inboxStatus(t, tdir)
	if last := ev[len(ev)-1]; last.File != "letter=a/x.parquet" || last.Errno != "EINVAL" || !strings.Contains(last.Error, "nope") {
		t.Errorf("last status %+v, want EINVAL for letter=a/x.parquet naming column nope", last)
	}
	// A final name where no file can be committed (the root of a
	// partitioned table): EINVAL naming the layout.
	if err := os.Rename(tmp, filepath.Join(inbox, "x.parquet")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("rename to the root of a partitioned table: %v, want EINVAL", err)
	}
	if ev := inboxStatus(t, tdir); !strings.Contains(ev[len(ev)-1].Error, "letter=<value>") {
		t.Errorf("last status %+v, want the partition layout", ev[len(ev)-1])
	}
	checkUnchanged(t, root, before)
	if got := tableFiles(t, root); !sameSizes(got, files) {
		t.Errorf("the refused renames wrote into the table:\nbefore %v\nafter  %v", files, got)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the refused file left its temporary name: %v", err)
	}
	// Fixed in place, renamed again: committed.
	data := parquetBytes(t, []basicDataRow{{ptr[int64](5), ptr(0.5)}})
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(leaf, "x.parquet")); err != nil {
		t.Fatalf("rename after the fix: %v", err)
	}
	c := inboxCases["partitioned"]
	c.parts = map[string]any{"letter": "a"}
	checkCommitted(t, c, root, tdir, "letter=a/x.parquet", before, data)
}

// TestInboxGoWriteFsyncRename is the os.Rename-style writer: write a
// temporary file, fsync, close, rename; the rename returns once the
// version is in _status.jsonl.
func TestInboxGoWriteFsyncRename(t *testing.T) {
	c := inboxCases["unpartitioned"]
	root, tdir := mountCopy(t, c.fixture, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	data := c.data(t)
	f, err := os.CreateTemp(inbox, ".out-*.tmp")
	if err != nil {
		t.Fatalf("create a temporary file: %v", err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	if err := f.Chmod(0o644); err != nil {
		t.Errorf("fchmod: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(f.Name(), mtime, mtime); err != nil {
		t.Errorf("utimens of the temporary file: %v", err)
	}
	checkUnchanged(t, root, before)
	if err := os.Rename(f.Name(), filepath.Join(inbox, "out.parquet")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	checkCommitted(t, c, root, tdir, "out.parquet", before, data)
}

// TestInboxRenameErrnos: the errnos of renames the inbox does not take.
func TestInboxRenameErrnos(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	leaf := filepath.Join(inbox, "letter=a")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	before := latestSnapshot(t, root)
	good := parquetBytes(t, []basicDataRow{{ptr[int64](1), ptr(1.0)}})
	tmp := filepath.Join(leaf, ".a.tmp")
	if err := os.WriteFile(tmp, good, 0o644); err != nil {
		t.Fatal(err)
	}
	// A final name held by a file being written: EEXIST, nothing replaced.
	held, err := os.Create(filepath.Join(leaf, "held.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(leaf, "held.parquet")); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("rename onto a taken name: %v, want EEXIST", err)
	}
	if err := os.Remove(held.Name()); err != nil {
		t.Error(err)
	}
	held.Close()
	outside := filepath.Join(t.TempDir(), "a.parquet")
	if err := os.Rename(tmp, outside); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("rename out of the inbox: %v, want EXDEV", err)
	}
	if err := os.Rename(tmp, filepath.Join(tdir, "@latest", "a.parquet")); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("rename into a snapshot: %v, want EXDEV", err)
	}
	if err := os.Rename(leaf, filepath.Join(inbox, "letter=b")); !errors.Is(err, syscall.EPERM) {
		t.Errorf("rename of a partition directory: %v, want EPERM", err)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, "_status.jsonl")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("rename onto the status file: %v, want EINVAL", err)
	}
	checkUnchanged(t, root, before)
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("the temporary file after refused renames: %v", err)
	}
}

// TestInboxStaleTemporaries: staged temporaries and empty scratch
// directories are removed after --inbox-stale-after without a commit.
func TestInboxStaleTemporaries(t *testing.T) {
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{InboxStaleAfter: 500 * time.Millisecond, Refresh: 100 * time.Millisecond})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	good := parquetBytes(t, []basicRow{{ptr("s"), ptr[int64](1), nil}})
	if err := os.WriteFile(filepath.Join(inbox, ".stale.parquet.tmp"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(inbox, "_temporary", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inbox, "_temporary", "0", "part-0.parquet"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	gone := eventually(20*time.Second, func() bool {
		return slices.Equal(readDirNames(t, inbox), []string{"_status.jsonl"})
	})
	if !gone {
		t.Fatalf("inbox still lists %v", readDirNames(t, inbox))
	}
	var expired []string
	for _, e := range inboxStatusOps(t, tdir) {
		if e.Op == "expire" {
			expired = append(expired, e.File)
		}
	}
	slices.Sort(expired)
	if want := []string{".stale.parquet.tmp", "_temporary/0/part-0.parquet"}; !slices.Equal(expired, want) {
		t.Errorf("expired %v, want %v", expired, want)
	}
	checkUnchanged(t, root, before)
}

// inboxStatusOps returns the op and file of each status line.
func inboxStatusOps(t *testing.T, tdir string) []struct{ Op, File string } {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tdir, "inbox", "_status.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []struct{ Op, File string }
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e struct {
			Op   string `json:"op"`
			File string `json:"file"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("status line %s: %v", line, err)
		}
		out = append(out, struct{ Op, File string }{e.Op, e.File})
	}
	return out
}

// TestInboxRenameIncomplete: a temporary file whose write failed
// (--cache-size spent) is refused by its rename with ENOSPC and kept;
// rewritten from the start, the same rename commits it.
func TestInboxRenameIncomplete(t *testing.T) {
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{CacheSize: 256 << 10})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	tmp := filepath.Join(inbox, "big.parquet.part")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 1<<20)); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write beyond --cache-size: %v, want ENOSPC", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close of a temporary name: %v, want 0 (staged, not committed)", err)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, "big.parquet")); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("rename of the incomplete file: %v, want ENOSPC", err)
	}
	checkUnchanged(t, root, before)
	data := parquetBytes(t, []basicRow{{ptr("small"), ptr[int64](1), nil}})
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatalf("rewrite of the kept file: %v", err)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, "big.parquet")); err != nil {
		t.Fatalf("rename after the rewrite: %v", err)
	}
	if v := latestSnapshot(t, root).Version(); v != before.Version()+1 {
		t.Errorf("version %d, want %d", v, before.Version()+1)
	}
}

// pendingFile is an entry of the inbox's pending list in .deltafs-status.json.
type pendingFile struct {
	File      string `json:"file"`
	Temporary bool   `json:"temporary"`
}

// pendingFiles returns the pending inbox files of the mount's first table.
func pendingFiles(t *testing.T, mnt string) []pendingFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mnt, ".deltafs-status.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Tables []struct {
			Inbox struct {
				Pending []pendingFile `json:"pending"`
			} `json:"inbox"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(data, &st); err != nil || len(st.Tables) == 0 {
		t.Fatalf(".deltafs-status.json: %v, %d tables", err, len(st.Tables))
	}
	return st.Tables[0].Inbox.Pending
}
