package integration

// The inbox on GCS (fake-gcs-server) and Azure (Azurite): the S3 inbox
// tests (objectstore_inbox_test.go) in brief, one append and one refusal
// per backend, through mount.Mount with the put-if-absent probe at mount.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// inboxBackends are the backends of TestObjectStoreInboxBackends, each with
// the inbox case (inboxCases) it appends.
var inboxBackends = []struct {
	kind  string
	start func(testing.TB) *testenv.Server
	cas   string
}{
	{"gcs", testenv.StartGCS, "unpartitioned"},
	{"azure", testenv.StartAzure, "partitioned"},
}

// TestObjectStoreInboxBackends mounts a table in GCS and one in Azure:
// a file without the table's columns is refused by close() with EINVAL,
// the status line naming the column, and the table unchanged; a good file
// becomes the next version, @latest moves to it before close returns and
// the new snapshot holds the old rows plus the file's.
func TestObjectStoreInboxBackends(t *testing.T) {
	testenv.RequireFUSE(t)
	for _, b := range inboxBackends {
		t.Run(b.kind, func(t *testing.T) {
			c := inboxCases[b.cas]
			srv := b.start(t)
			testenv.UploadDir(t, srv.URL, "warehouse/t", testenv.Fixture(t, c.fixture))
			u := srv.BucketURL("warehouse/t")
			before := latestSnapshot(t, u)
			v := before.Version()
			tdir := filepath.Join(mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: u}}}), "t")
			dir := filepath.Join(tdir, "inbox", c.dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatalf("mkdir %s: %v", dir, err)
			}

			err := os.WriteFile(filepath.Join(dir, "wrong.parquet"), parquetBytes(t, []wrongRow{{1}}), 0o644)
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("write of a file with a wrong column: %v, want EINVAL", err)
			}
			if ev := inboxStatus(t, tdir); ev[len(ev)-1].Errno != "EINVAL" || !strings.Contains(ev[len(ev)-1].Error, "nope") {
				t.Errorf("last status %s, want EINVAL naming the column", statusText(ev[len(ev)-1]))
			}
			if got := latestSnapshot(t, u).Version(); got != v {
				t.Fatalf("refused file changed the table: version %d -> %d", v, got)
			}

			data := c.data(t)
			if err := os.WriteFile(filepath.Join(dir, "new.parquet"), data, 0o644); err != nil {
				t.Fatalf("write into the %s inbox: %v", b.kind, err)
			}
			if got, err := os.Readlink(filepath.Join(tdir, "@latest")); err != nil || got != fmt.Sprintf("@v%d", v+1) {
				t.Errorf("@latest -> %q, %v right after close; want @v%d", got, err, v+1)
			}
			checkNewLiveFile(t, u, before, c.parts)
			checkRows(t, c, tdir, v, data)
		})
	}
}
