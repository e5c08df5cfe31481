package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// TestS3InboxAppend drops a file into the inbox of a table in S3: close
// succeeds only once the new version exists in the bucket, and @latest
// moves to it.
func TestS3InboxAppend(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "warehouse/basic", testenv.Fixture(t, fixtureAppend))
	u := srv.BucketURL("warehouse/basic")
	before, err := delta.Open(openStore(t, u), delta.Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: u}}})
	data := inboxCases["unpartitioned"].data(t)
	if err := os.WriteFile(filepath.Join(mnt, "t", "inbox", "new.parquet"), data, 0o644); err != nil {
		t.Fatalf("write into the S3 inbox: %v", err)
	}
	after, err := delta.Open(openStore(t, u), delta.Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.Version() != before.Version()+1 || len(after.Files()) != len(before.Files())+1 {
		t.Fatalf("after close: v%d with %d files; want v%d with %d", after.Version(), len(after.Files()), before.Version()+1, len(before.Files())+1)
	}
	var rows int64
	for _, a := range after.Files() {
		n, _ := a.NumRecords()
		rows += n
	}
	if rows != 5+2 {
		t.Errorf("%d rows after the append, want 7", rows)
	}
	target, err := os.Readlink(filepath.Join(mnt, "t", "@latest"))
	if err != nil || target != "@v2" {
		t.Errorf("@latest -> %q, %v; want @v2", target, err)
	}
}

// TestS3InboxRefusedWithoutAtomicPut mounts a table through a proxy that
// turns S3's 412 answers into 200 (a store ignoring If-None-Match): the
// mount must refuse appends with EROFS and say why, and append with
// SingleWriter.
func TestS3InboxRefusedWithoutAtomicPut(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "warehouse/basic", testenv.Fixture(t, fixtureAppend))
	proxy := newCountingProxy(t, srv.Addr)
	proxy.mu.Lock()
	proxy.ignoreIfAbsnt = true
	proxy.mu.Unlock()
	u := proxy.url(srv, "warehouse/basic")
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: u}}})
	data := inboxCases["unpartitioned"].data(t)
	err := os.WriteFile(filepath.Join(mnt, "t", "inbox", "new.parquet"), data, 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write into the inbox of a non-atomic store: %v, want EROFS", err)
	}
	reason, _ := os.ReadFile(filepath.Join(mnt, "t", "inbox", "_deltafs_error.txt"))
	if !strings.Contains(string(reason), "put-if-absent") {
		t.Errorf("inbox reason %q does not explain the refusal", reason)
	}
	if s, err := delta.Open(openStore(t, srv.BucketURL("warehouse/basic")), delta.Options{}).Latest(context.Background()); err != nil || s.Version() != 1 {
		t.Fatalf("table changed: %v", err)
	}

	mnt2 := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: u}}, SingleWriter: true})
	if err := os.WriteFile(filepath.Join(mnt2, "t", "inbox", "new.parquet"), data, 0o644); err != nil {
		t.Fatalf("single-writer append: %v", err)
	}
	if s, err := delta.Open(openStore(t, srv.BucketURL("warehouse/basic")), delta.Options{}).Latest(context.Background()); err != nil || s.Version() != 2 {
		t.Fatalf("single-writer append did not land: %v", err)
	}
}

// TestS3InboxBatch: a scratch directory renamed into place in the inbox
// of a table in S3 is one version holding every file, there when the
// rename returns.
func TestS3InboxBatch(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "warehouse/part", testenv.Fixture(t, fixturePartitioned))
	u := srv.BucketURL("warehouse/part")
	before, err := delta.Open(openStore(t, u), delta.Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: u}}})
	inbox := filepath.Join(mnt, "t", "inbox")
	files := map[string][]byte{}
	for i := range 4 {
		files[filepath.Join("letter="+[]string{"a", "b"}[i%2], fmt.Sprintf("p%d.parquet", i))] = parquetBytes(t, []basicDataRow{{ptr(int64(i)), nil}})
	}
	writeFiles(t, filepath.Join(inbox, ".job"), files)
	if err := os.Rename(filepath.Join(inbox, ".job"), filepath.Join(inbox, "job")); err != nil {
		t.Fatalf("rename of the batch: %v", err)
	}
	after, err := delta.Open(openStore(t, u), delta.Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.Version() != before.Version()+1 || len(after.Files()) != len(before.Files())+4 {
		t.Fatalf("after the rename: v%d with %d files; want v%d with %d", after.Version(), len(after.Files()), before.Version()+1, len(before.Files())+4)
	}
}
