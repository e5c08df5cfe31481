package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"golang.org/x/sys/unix"
)

// TestInboxTemporaryNotCommitted: close, fsync and release of a file
// with a temporary name commit nothing; the rename does.
func TestInboxTemporaryNotCommitted(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	for _, name := range []string{".a.parquet", "_a.parquet", "a.parquet.tmp", "a.part"} {
		f, err := os.Create(filepath.Join(inbox, name))
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if _, err := f.Write(parquetish); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Errorf("fsync %s: %v", name, err)
		}
		if err := f.Close(); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
		if st, err := os.Stat(f.Name()); err != nil || st.Size() != int64(len(parquetish)) {
			t.Errorf("stat %s after close: %v, %v", name, st, err)
		}
	}
	if n := len(w.calls()); n != 0 {
		t.Fatalf("%d appends of temporary names, want 0", n)
	}
	if err := os.Rename(filepath.Join(inbox, "a.part"), filepath.Join(inbox, "a.parquet")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	if calls := w.calls(); len(calls) != 1 || calls[0].Name != "a.parquet" {
		t.Errorf("appends = %+v, want a.parquet", calls)
	}
	if err := os.WriteFile(filepath.Join(inbox, "UPPER.PARQUET"), parquetish, 0o644); err != nil {
		t.Fatalf("write UPPER.PARQUET: %v", err)
	}
	if n := len(w.calls()); n != 2 {
		t.Errorf("%d appends after UPPER.PARQUET, want 2: the suffix is a final one in any case", n)
	}
	if _, err := os.Stat(filepath.Join(inbox, "a.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("committed file still listed: %v", err)
	}
}

// TestInboxRenameWhileOpen: a temporary file renamed to a final name
// while still open for writing only moves; its last close commits it.
func TestInboxRenameWhileOpen(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	f, err := os.Create(filepath.Join(inbox, ".open.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(parquetish); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), filepath.Join(inbox, "open.parquet")); err != nil {
		t.Fatalf("rename while open: %v", err)
	}
	if n := len(w.calls()); n != 0 {
		t.Fatalf("%d appends before the close, want 0", n)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if calls := w.calls(); len(calls) != 1 || calls[0].Name != "open.parquet" {
		t.Errorf("appends = %+v, want open.parquet", calls)
	}
}

// TestInboxBatchBusy: a batch holding a file still open for writing is
// refused with EBUSY and stays; once closed, the rename commits it all
// in one Append.
func TestInboxBatchBusy(t *testing.T) {
	w := &fakeWriter{}
	inbox, _ := mountInbox(t, w)
	batch := filepath.Join(inbox, ".b")
	if err := os.Mkdir(batch, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(batch, "one.parquet"), parquetish, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(batch, "two.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(parquetish); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(batch, filepath.Join(inbox, "b")); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("rename of a batch with an open file: %v, want EBUSY", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close in a batch: %v", err)
	}
	if n := len(w.calls()); n != 0 {
		t.Fatalf("%d appends before the batch's rename, want 0", n)
	}
	if err := os.Rename(batch, filepath.Join(inbox, "b")); err != nil {
		t.Fatalf("rename of the batch: %v", err)
	}
	if calls := w.calls(); len(calls) != 2 || calls[0].Name != "b/one.parquet" || calls[1].Name != "b/two.parquet" {
		t.Errorf("appends = %+v, want b/one.parquet and b/two.parquet", calls)
	}
	if _, err := os.Stat(filepath.Join(inbox, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat of the committed batch: %v, want ENOENT", err)
	}
	if names := testenv.DirNames(t, inbox); len(names) != 1 || names[0] != StatusName {
		t.Errorf("inbox lists %v after the batch", names)
	}
}

// TestInboxRefusedRenameRetriedOnce: coreutils mv retries a renameat2
// refused with EINVAL as a plain rename; the same refusal at once is one
// status line and one count, and both calls get EINVAL.
func TestInboxRefusedRenameRetriedOnce(t *testing.T) {
	inbox, _ := mountInbox(t, &fakeWriter{})
	tmp := filepath.Join(inbox, "bad.part")
	if err := os.WriteFile(tmp, []byte("not parquet at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(inbox, "bad.parquet")
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, final, unix.RENAME_NOREPLACE); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("renameat2 NOREPLACE: %v, want EINVAL", err)
	}
	if err := os.Rename(tmp, final); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("rename: %v, want EINVAL", err)
	}
	var renames []StatusEvent
	for _, e := range statusEvents(t, inbox) {
		if e.Op == "rename" {
			renames = append(renames, e)
		}
	}
	if len(renames) != 1 || renames[0].File != "bad.parquet" || renames[0].From != "bad.part" {
		t.Errorf("rename status lines %+v, want one for bad.part -> bad.parquet", renames)
	}
}
