package inbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/nodes"
)

// Tests that an acknowledgement (close() or rename() returning 0) is
// given only once the file is committed.

// mountInboxEnv is mountInbox with the Env adjusted by set before the mount.
func mountInboxEnv(t *testing.T, w *fakeWriter, set func(*Env)) string {
	t.Helper()
	testenv.RequireFUSE(t)
	st, err := blobstore.Open(context.Background(), testenv.Fixture(t, "dat/basic_append"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	env := NewEnv(nodes.NewEnv(nodes.Options{}), Options{})
	set(env)
	d := nodes.NewTableDir(env.tree, "t", delta.Open(st, delta.Options{}), nil)
	Enable(env, d, w, t.TempDir())
	return filepath.Join(testenv.MountFUSE(t, nodes.NewRoot([]*nodes.TableDir{d})), "t", nodes.InboxName)
}

func (w *fakeWriter) versions() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next
}

// fdinfoModes runs a test with this kernel's fdinfo and, when it has
// ino: lines, again as on a kernel without them (matched by path).
func fdinfoModes(t *testing.T, run func(t *testing.T, set func(*Env))) {
	t.Run("kernel", func(t *testing.T) { run(t, func(*Env) {}) })
	t.Run("no-ino", func(t *testing.T) { run(t, func(e *Env) { e.fdinfo = fdinfoNoIno }) })
}

// A descriptor open for reading on the file (here the writer's own
// process, as a sibling thread's fresh open would be) is no dup of the
// write handle: the writer's close commits and returns the outcome. The
// old check counted it, and close() returned 0 with nothing committed.
func TestInboxReaderDoesNotDelayCommit(t *testing.T) {
	fdinfoModes(t, func(t *testing.T, set func(*Env)) {
		w := &fakeWriter{}
		inbox := mountInboxEnv(t, w, set)
		p := filepath.Join(inbox, "read.parquet")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(parquetish); err != nil {
			t.Fatal(err)
		}
		r, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := f.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		if got := w.contents(); len(got) != 1 || !bytes.Equal(got[0], parquetish) {
			t.Fatalf("after close() returned 0: commits %q, want one of %q", got, parquetish)
		}
	})
}

// An fsync through a descriptor open for reading commits nothing: the
// writer has not said it is done. The old code committed the bytes there
// so far (a valid-looking prefix here) and refused the writer's next
// write with EROFS.
func TestInboxReaderFsyncCommitsNothing(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	p := filepath.Join(inbox, "sync.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("PAR1 first PAR1")); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(); err != nil {
		t.Fatalf("fsync of the reader: %v", err)
	}
	r.Close()
	if n := w.versions(); n != 0 {
		t.Fatalf("a reader's fsync committed %d versions, want 0", n)
	}
	if _, err := f.Write([]byte(" second PAR1")); err != nil {
		t.Fatalf("write after a reader's fsync: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	want := []byte("PAR1 first PAR1 second PAR1")
	if got := w.contents(); len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Errorf("commits %q, want one of %q", got, want)
	}
}

// A dup of the write descriptor keeps the file open also when fdinfo
// has no ino: line (matched by its path): closing the dup commits
// nothing, the last close commits the whole file.
func TestInboxDupWithoutFdinfoIno(t *testing.T) {
	w := &fakeWriter{}
	inbox := mountInboxEnv(t, w, func(e *Env) { e.fdinfo = fdinfoNoIno })
	f, err := os.Create(filepath.Join(inbox, "dup.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(parquetish[:8]); err != nil {
		t.Fatal(err)
	}
	fd2, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Close(fd2); err != nil {
		t.Fatalf("close of the dup: %v", err)
	}
	if n := w.versions(); n != 0 {
		t.Fatalf("closing a dup committed the half-written file")
	}
	if _, err := f.Write(parquetish[8:]); err != nil {
		t.Fatalf("write after the dup's close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("last close: %v", err)
	}
	if got := w.contents(); len(got) != 1 || !bytes.Equal(got[0], parquetish) {
		t.Errorf("commits %q, want one of %q", got, parquetish)
	}
}

// The probe agrees with this kernel's fdinfo.
func TestProbeFdinfo(t *testing.T) {
	data, err := os.ReadFile("/proc/self/fdinfo/0")
	if err != nil {
		testenv.Skip(t, "no /proc/self/fdinfo: %v", err)
	}
	want := fdinfoNoIno
	if strings.Contains(string(data), "\nino:") {
		want = fdinfoHasIno
	}
	if got := probeFdinfo(); got != want {
		t.Errorf("probeFdinfo = %d, want %d (fdinfo %q)", got, want, data)
	}
}

// A file created in a batch directory just before the batch's rename,
// and put in the tree after the batch looked at the directory, is not
// dropped: the batch is refused (EBUSY) and commits later with it. The
// old code committed the batch without it and removed its directory:
// the file's close() returned 0 and its bytes were never committed.
func TestInboxBatchLocksOutCreates(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	batch, final := filepath.Join(inbox, ".b"), filepath.Join(inbox, "b")
	if err := os.Mkdir(batch, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(batch, "one.parquet"), parquetish, 0o644); err != nil {
		t.Fatal(err)
	}
	renamed := make(chan error, 1)
	hook := func(d *Dir, name string) {
		if name == "late.parquet" {
			renamed <- os.Rename(batch, final) // the batch runs between admission and insertion
		}
	}
	testHookAdmitted.Store(&hook)
	t.Cleanup(func() { testHookAdmitted.Store(nil) })
	f, err := os.Create(filepath.Join(batch, "late.parquet"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	testHookAdmitted.Store(nil)
	renameErr := <-renamed
	_, werr := f.Write(parquetish)
	cerr := f.Close()
	if renameErr == nil {
		// The batch went first: then the file must not have been
		// acknowledged as kept.
		if werr == nil && cerr == nil {
			t.Fatalf("the batch committed %d files without late.parquet, whose write and close() returned 0: its bytes are lost", len(w.calls()))
		}
		return
	}
	if !errors.Is(renameErr, syscall.EBUSY) {
		t.Fatalf("rename during a create: %v, want EBUSY", renameErr)
	}
	if werr != nil || cerr != nil {
		t.Fatalf("write %v, close %v of the staged file", werr, cerr)
	}
	if err := os.Rename(batch, final); err != nil {
		t.Fatalf("rename once the create is done: %v", err)
	}
	if calls := w.calls(); len(calls) != 2 || calls[0].Name != "b/late.parquet" || calls[1].Name != "b/one.parquet" || w.versions() != 1 {
		t.Errorf("appends %+v in %d versions, want b/late.parquet and b/one.parquet in one", calls, w.versions())
	}
}

// Every outcome stays in _status.jsonl and the counts for as long as the
// mount runs (the old log kept the last 256).
func TestInboxStatusKeepsEveryCommit(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	const n = 300
	for i := range n {
		p := filepath.Join(inbox, "f"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+".parquet")
		if err := os.WriteFile(p, parquetish, 0o644); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if got := len(statusEvents(t, inbox)); got != n {
		t.Errorf("_status.jsonl holds %d events, want %d", got, n)
	}
}

// The counts of .deltafs-status.json cover every event, and the file
// every line.
func TestStatusLogCountsEverything(t *testing.T) {
	l := newStatusLog(filepath.Join(t.TempDir(), "s.jsonl"))
	defer l.close()
	for range 300 {
		l.add(StatusEvent{Op: "commit", File: "a.parquet"})
	}
	for i := range 30 {
		l.add(StatusEvent{Op: "commit", File: "b.parquet", Error: "no " + string(rune('a'+i%26)), Errno: "EINVAL"})
	}
	commits, refusals, recent := l.counts()
	if commits != 300 || refusals != 30 || len(recent) != statusRefusalsShown || recent[len(recent)-1].Error != "no d" {
		t.Errorf("counts %d commits, %d refusals, %d recent (last %+v), want 300, 30, %d ending with \"no d\"", commits, refusals, len(recent), recent[len(recent)-1], statusRefusalsShown)
	}
	if lines := bytes.Count(l.jsonl(), []byte("\n")); lines != 330 || int64(len(l.jsonl())) != l.length() {
		t.Errorf("%d lines of %d bytes (length %d), want 330", lines, len(l.jsonl()), l.length())
	}
}
