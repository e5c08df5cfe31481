package inbox

import (
	"bufio"
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
	"sync"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/nodes"
)

// fakeWriter stands for writeback.Committer: it accepts files that start
// and end with the Parquet magic and records them.
type fakeWriter struct {
	cols     []*delta.StructField
	notWrite error // returned by Writable when set
	storage  error // returned by Append when set

	mu      sync.Mutex
	next    int64
	appends []StagedFile
	content [][]byte
}

func (w *fakeWriter) Writable(context.Context) error { return w.notWrite }

func (w *fakeWriter) PartitionColumns(context.Context) ([]*delta.StructField, error) {
	return w.cols, nil
}

func (w *fakeWriter) Check(ctx context.Context, files []StagedFile) error {
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f.LocalPath)
		if err != nil {
			return err
		}
		if len(data) < 8 || !bytes.HasPrefix(data, []byte("PAR1")) || !bytes.HasSuffix(data, []byte("PAR1")) {
			errs = append(errs, fmt.Errorf("%w: %s: not a Parquet file", nodes.ErrInvalidFile, f.Name))
		}
	}
	return errors.Join(errs...)
}

func (w *fakeWriter) Append(ctx context.Context, files []StagedFile) (int64, error) {
	var all [][]byte
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f.LocalPath)
		if err != nil {
			return 0, err
		}
		if len(data) < 8 || !bytes.HasPrefix(data, []byte("PAR1")) || !bytes.HasSuffix(data, []byte("PAR1")) {
			errs = append(errs, fmt.Errorf("%w: %s: not a Parquet file", nodes.ErrInvalidFile, f.Name))
		}
		all = append(all, data)
	}
	if w.storage != nil {
		return 0, w.storage
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	w.appends = append(w.appends, files...)
	w.content = append(w.content, all...)
	return w.next, nil
}

func (w *fakeWriter) calls() []StagedFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.appends)
}

func (w *fakeWriter) contents() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.content)
}

var parquetish = []byte("PAR1 some pages and a footer PAR1")

// mountInbox mounts one fixture table, read in place (the fake writer
// never writes), as MOUNTPOINT/t with an inbox fed to w. It returns the
// inbox path and the staging dir.
func mountInbox(t *testing.T, w *fakeWriter) (string, string) {
	t.Helper()
	testenv.RequireFUSE(t)
	st, err := blobstore.Open(context.Background(), testenv.Fixture(t, "dat/basic_append"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	env := NewEnv(nodes.NewEnv(nodes.Options{}), Options{})
	d := nodes.NewTableDir(env.tree, "t", delta.Open(st, delta.Options{}), nil)
	staging := t.TempDir()
	Enable(env, d, w, staging)
	return filepath.Join(testenv.MountFUSE(t, nodes.NewRoot([]*nodes.TableDir{d})), "t", nodes.InboxName), staging
}

func statusEvents(t *testing.T, inbox string) []StatusEvent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(inbox, StatusName))
	if err != nil {
		t.Fatal(err)
	}
	var out []StatusEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e StatusEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("status line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func TestInboxCommitAndRefuse(t *testing.T) {
	w := &fakeWriter{next: 1}
	inbox, staging := mountInbox(t, w)
	if got := testenv.DirNames(t, filepath.Dir(inbox)); !slices.Contains(got, nodes.InboxName) {
		t.Fatalf("table dir lists %v, no inbox", got)
	}
	if err := os.WriteFile(filepath.Join(inbox, "good.parquet"), parquetish, 0o644); err != nil {
		t.Fatalf("write good file: %v", err)
	}
	calls := w.calls()
	if len(calls) != 1 || calls[0].Name != "good.parquet" || len(calls[0].PartitionValues) != 0 {
		t.Fatalf("appends = %+v, want good.parquet once", calls)
	}
	if !bytes.Equal(w.content[0], parquetish) {
		t.Errorf("committed %q, want %q", w.content[0], parquetish)
	}
	err := os.WriteFile(filepath.Join(inbox, "bad.parquet"), []byte("hello"), 0o644)
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("close of a non-Parquet file: %v, want EINVAL", err)
	}
	if got := testenv.DirNames(t, inbox); !slices.Equal(got, []string{StatusName}) {
		t.Errorf("inbox lists %v after the outcomes, want only %s", got, StatusName)
	}
	if left := testenv.DirNames(t, staging); len(left) != 0 {
		t.Errorf("staging keeps %v", left)
	}
	ev := statusEvents(t, inbox)
	if len(ev) != 2 || ev[0].Version == nil || *ev[0].Version != 2 || ev[0].File != "good.parquet" ||
		ev[1].Errno != "EINVAL" || !strings.Contains(ev[1].Error, "not a Parquet file") {
		t.Errorf("status = %+v", ev)
	}
}

func TestInboxStorageErrorIsEIO(t *testing.T) {
	w := &fakeWriter{storage: errors.New("bucket on fire")}
	inbox, _ := mountInbox(t, w)
	err := os.WriteFile(filepath.Join(inbox, "x.parquet"), parquetish, 0o644)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("close: %v, want EIO", err)
	}
	if ev := statusEvents(t, inbox); len(ev) != 1 || ev[0].Errno != "EIO" || !strings.Contains(ev[0].Error, "bucket on fire") {
		t.Errorf("status = %+v", ev)
	}
}

func TestInboxNamesRefused(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	for _, name := range []string{"a\x01b", strings.Repeat("x", 220)} {
		err := os.WriteFile(filepath.Join(inbox, name), parquetish, 0o644)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("create %q: %v, want EINVAL", name, err)
		}
	}
	if err := os.Symlink("x", filepath.Join(inbox, "link")); !errors.Is(err, syscall.EPERM) {
		t.Errorf("symlink: %v, want EPERM", err)
	}
	if err := syscall.Mknod(filepath.Join(inbox, "fifo"), syscall.S_IFIFO|0o644, 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("mkfifo: %v, want EPERM", err)
	}
	if err := os.Mkdir(filepath.Join(inbox, "a=1"), 0o755); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("mkdir in an unpartitioned inbox: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(inbox, StatusName), nil, 0o644); err == nil {
		t.Error("writing the status file succeeded")
	}
	if len(w.calls()) != 0 {
		t.Errorf("appends = %+v, want none", w.calls())
	}
}

// TestInboxEmptyThenWritten: touch leaves an empty staged file (listed,
// no commit, no error); writing it later commits.
func TestInboxEmptyThenWritten(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	p := filepath.Join(inbox, "later.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close of an empty file: %v", err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 0 {
		t.Fatalf("stat of the empty staged file: %v, %v", st, err)
	}
	if len(w.calls()) != 0 {
		t.Fatalf("an empty file was committed")
	}
	f, err = os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(parquetish[:10]); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 10 {
		t.Errorf("size while writing: %v, %v; want 10", st, err)
	}
	if _, err := f.Write(parquetish[10:]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if calls := w.calls(); len(calls) != 1 || calls[0].Name != "later.parquet" {
		t.Errorf("appends = %+v", calls)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("committed file still in the inbox: %v", err)
	}
}

// TestInboxDupFlushCommitsOnce: two descriptors of one open file flush
// twice; the second close answers the same without a second commit.
func TestInboxDupFlushCommitsOnce(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	f, err := os.Create(filepath.Join(inbox, "dup.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(parquetish); err != nil {
		t.Fatal(err)
	}
	fd2, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Close(fd2); err != nil {
		t.Fatalf("close of the dup: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close of the original: %v", err)
	}
	if n := len(w.calls()); n != 1 {
		t.Errorf("%d appends, want 1", n)
	}
}

// TestInboxFsyncCommits: fsync commits; later writes are refused.
func TestInboxFsyncCommits(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	f, err := os.Create(filepath.Join(inbox, "synced.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(parquetish); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	if n := len(w.calls()); n != 1 {
		t.Fatalf("%d appends after fsync, want 1", n)
	}
	if _, err := f.Write([]byte("more")); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write after the commit: %v, want EROFS", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close after fsync: %v", err)
	}
	if n := len(w.calls()); n != 1 {
		t.Errorf("%d appends after close, want 1", n)
	}
}

func TestInboxRenameAndUnlink(t *testing.T) {
	w := &fakeWriter{}
	inbox, staging := mountInbox(t, w)
	tmp := filepath.Join(inbox, "x.tmp")
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, StatusName)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("rename to a reserved name: %v, want EINVAL", err)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, "x.parquet")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	if got := testenv.DirNames(t, inbox); !slices.Equal(got, []string{StatusName, "x.parquet"}) {
		t.Errorf("inbox lists %v after the rename", got)
	}
	f, err := os.OpenFile(filepath.Join(inbox, "x.parquet"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(parquetish)
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if calls := w.calls(); len(calls) != 1 || calls[0].Name != "x.parquet" {
		t.Errorf("appends = %+v, want x.parquet", calls)
	}
	if err := os.WriteFile(filepath.Join(inbox, "gone"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(inbox, "gone")); err != nil {
		t.Errorf("unlink of a staged file: %v", err)
	}
	if err := os.Remove(filepath.Join(inbox, StatusName)); !errors.Is(err, syscall.EPERM) {
		t.Errorf("unlink of the status file: %v, want EPERM", err)
	}
	if left := testenv.DirNames(t, staging); len(left) != 0 {
		t.Errorf("staging keeps %v", left)
	}
}

func TestInboxPartitionDirs(t *testing.T) {
	w := &fakeWriter{cols: []*delta.StructField{
		{Name: "year", Type: delta.PrimitiveType{Name: "integer"}, Nullable: false},
		{Name: "letter", Type: delta.PrimitiveType{Name: "string"}, Nullable: true},
	}}
	inbox, _ := mountInbox(t, w)
	err := os.WriteFile(filepath.Join(inbox, "root.parquet"), parquetish, 0o644)
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("file at the root of a partitioned inbox: %v, want EINVAL", err)
	}
	ev := statusEvents(t, inbox)
	if len(ev) != 1 || !strings.Contains(ev[0].Error, "inbox/year=<value>/letter=<value>/") {
		t.Errorf("status = %+v, want the hint where files go", ev)
	}
	for _, bad := range []string{"letter=a", "year=abc", "year=" + HiveDefault, "nocolumn", "year=%zz"} {
		if err := os.Mkdir(filepath.Join(inbox, bad), 0o755); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("mkdir %s: %v, want EINVAL", bad, err)
		}
	}
	leaf := filepath.Join(inbox, "Year=0042", "letter="+HiveDefault)
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", leaf, err)
	}
	if err := os.Mkdir(filepath.Join(leaf, "more=1"), 0o755); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("mkdir below the last partition column: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(leaf), "mid.parquet"), parquetish, 0o644); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("file above the leaf: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "p.parquet"), parquetish, 0o644); err != nil {
		t.Fatalf("file in the leaf: %v", err)
	}
	calls := w.calls()
	if len(calls) != 1 || *calls[0].PartitionValues["year"] != "42" || calls[0].PartitionValues["letter"] != nil {
		t.Fatalf("appends = %+v, want year=42 letter=null", calls)
	}
	if err := os.Remove(filepath.Join(inbox, "Year=0042")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("rmdir of a non-empty partition dir: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(inbox, "Year=0042")); err != nil {
		t.Errorf("rm -r of partition dirs: %v", err)
	}
}

// A partition column whose name starts with "_" takes files in its
// directories (_p=1/x.parquet commits), as Spark lists them; "_" without
// "=" is still a scratch directory.
func TestInboxUnderscorePartitionColumn(t *testing.T) {
	w := &fakeWriter{cols: []*delta.StructField{{Name: "_p", Type: delta.PrimitiveType{Name: "integer"}, Nullable: true}}}
	inbox, _ := mountInbox(t, w)
	leaf := filepath.Join(inbox, "_p=7")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", leaf, err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "x.parquet"), parquetish, 0o644); err != nil {
		t.Fatalf("file in _p=7: %v", err)
	}
	calls := w.calls()
	if len(calls) != 1 || *calls[0].PartitionValues["_p"] != "7" {
		t.Fatalf("appends = %+v, want one with _p=7", calls)
	}
	if err := os.MkdirAll(filepath.Join(inbox, "_scratch", "_p=8"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inbox, "_scratch", "_p=8", "y.parquet"), parquetish, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(w.calls()); n != 1 {
		t.Errorf("a file in scratch dir _scratch was appended (%d appends)", n)
	}
}

// HiveDefault is the Hive name of a null partition value.
const HiveDefault = delta.HiveDefaultPartition

func TestInboxNotWritable(t *testing.T) {
	w := &fakeWriter{notWrite: fmt.Errorf("%w: table uses invariants", nodes.ErrNotWritable)}
	inbox, _ := mountInbox(t, w)
	st, err := os.Stat(inbox)
	if err != nil || st.Mode().Perm() != 0o555 {
		t.Errorf("inbox of an unwritable table: %v, %v; want mode 0555", st, err)
	}
	if got := testenv.DirNames(t, inbox); !slices.Equal(got, []string{nodes.ReasonName, StatusName}) {
		t.Errorf("inbox lists %v", got)
	}
	reason, err := os.ReadFile(filepath.Join(inbox, nodes.ReasonName))
	if err != nil || !strings.Contains(string(reason), "invariants") {
		t.Errorf("reason = %q, %v", reason, err)
	}
	if err := os.WriteFile(filepath.Join(inbox, "x.parquet"), parquetish, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create: %v, want EROFS", err)
	}
}

// TestInboxSecondWriterBusy: while one handle writes a staged file, a
// second open of the name for writing (O_TRUNC or not) and a truncate by
// path are EBUSY, so that the first writer's acknowledged bytes are the
// ones committed; once the first closed, the name can be written again.
func TestInboxSecondWriterBusy(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	p := filepath.Join(inbox, "same.parquet")
	first, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close() // a no-op once closed; before that, lets the mount go
	mine := []byte("PAR1 the first writer's rows PAR1")
	if _, err := first.Write(mine[:10]); err != nil {
		t.Fatal(err)
	}
	for _, flags := range []int{os.O_WRONLY | os.O_TRUNC, os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_RDWR, os.O_WRONLY | os.O_APPEND} {
		if second, err := os.OpenFile(p, flags, 0o644); !errors.Is(err, syscall.EBUSY) {
			if err == nil {
				second.Close()
			}
			t.Errorf("second open for writing (flags %#x): %v, want EBUSY", flags, err)
		}
	}
	// Another process truncating by path (O_TRUNC and truncate(2) reach
	// the mount as a truncate without a handle).
	if out, err := exec.Command("truncate", "-s", "0", p).CombinedOutput(); err == nil {
		t.Errorf("truncate by another process succeeded: %s", out)
	}
	reader, err := os.Open(p)
	if err != nil {
		t.Errorf("open for reading while written: %v", err)
	} else {
		reader.Close()
	}
	if _, err := first.Write(mine[10:]); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("close of the first writer: %v", err)
	}
	if got := w.contents(); len(got) != 1 || !bytes.Equal(got[0], mine) {
		t.Fatalf("committed %q, want the first writer's %q", got, mine)
	}
	if err := os.WriteFile(p, parquetish, 0o644); err != nil {
		t.Fatalf("write after the first committed: %v", err)
	}
	if got := w.contents(); len(got) != 2 || !bytes.Equal(got[1], parquetish) {
		t.Errorf("second commit %q, want %q", got, parquetish)
	}
}

// TestInboxDupClosedEarly: a shell's "exec 3>f; ...; cmd >&3" closes a
// dup of the descriptor after each command; those closes are not the end
// of the file. It commits once, whole, at the last close.
func TestInboxDupClosedEarly(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	p := filepath.Join(inbox, "shell.parquet")
	script := `exec 3>"$1"; printf 'PAR1 first half ' >&3; echo -n '' >&3; printf 'second half PAR1' >&3; exec 3>&-`
	if out, err := exec.Command("sh", "-c", script, "sh", p).CombinedOutput(); err != nil {
		t.Fatalf("shell: %v: %s", err, out)
	}
	want := []byte("PAR1 first half second half PAR1")
	if got := w.contents(); len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Errorf("commits %q, want one of %q", got, want)
	}
	// The same with dup(2) in this process, closing the copy first.
	f, err := os.Create(filepath.Join(inbox, "dup2.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // a no-op once closed; before that, lets the mount go
	f.Write(want[:8])
	fd2, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Close(fd2); err != nil {
		t.Fatalf("close of the dup: %v", err)
	}
	if len(w.calls()) != 1 {
		t.Fatalf("closing a dup committed the half-written file")
	}
	if _, err := f.Write(want[8:]); err != nil {
		t.Fatalf("write after the dup's close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("last close: %v", err)
	}
	if got := w.contents(); len(got) != 2 || !bytes.Equal(got[1], want) {
		t.Errorf("commits %q, want %q second", got, want)
	}
}

// TestInboxPartitionDirsUTF8: a directory DuckDB or pyarrow names
// (the UTF-8 bytes of "ünï" percent-encoded) means "ünï", not the Latin-1
// "Ã¼nÃ¯"; one whose bytes are not UTF-8 is refused with the reason in the
// status file.
func TestInboxPartitionDirsUTF8(t *testing.T) {
	w := &fakeWriter{cols: []*delta.StructField{{Name: "letter", Type: delta.PrimitiveType{Name: "string"}, Nullable: true}}}
	inbox, _ := mountInbox(t, w)
	leaf := filepath.Join(inbox, "letter=%C3%BCn%C3%AF")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", leaf, err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "p.parquet"), parquetish, 0o644); err != nil {
		t.Fatalf("file in the leaf: %v", err)
	}
	if calls := w.calls(); len(calls) != 1 || calls[0].PartitionValues["letter"] == nil || *calls[0].PartitionValues["letter"] != "ünï" {
		t.Fatalf("appends = %+v, want letter=ünï", calls)
	}
	for _, bad := range []string{"letter=%E9t%E9", "letter=%C3"} {
		if err := os.Mkdir(filepath.Join(inbox, bad), 0o755); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("mkdir %s: %v, want EINVAL", bad, err)
		}
	}
	ev := statusEvents(t, inbox)
	if len(ev) == 0 || !strings.Contains(ev[len(ev)-1].Error, "UTF-8") {
		t.Errorf("status = %+v, want the UTF-8 reason", ev)
	}
}
