package integration

// The table audit of the crash and race tests must fail on a broken
// table: each case breaks a copy of basic_append one way.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// auditRecorder is a testing.TB that records failures instead of
// failing; Fatal ends the calling goroutine.
type auditRecorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *auditRecorder) Helper() {}

func (r *auditRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *auditRecorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *auditRecorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func TestTableAuditCatches(t *testing.T) {
	const addV1 = "part-00000-4ae8c002-c1fa-4afe-abaa-75e0962184e0-c000.snappy.parquet"
	log := func(root string, v int) string {
		return filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", v))
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, root string)
		acked  bool // claim an append "x.parquet" was acknowledged
		want   string
	}{
		{"healthy table", func(*testing.T, string) {}, false, ""},
		{"gap in the versions", func(t *testing.T, root string) { mustDo(t, os.Rename(log(root, 1), log(root, 3))) }, false, "not contiguous"},
		{"data file added twice", func(t *testing.T, root string) {
			data, err := os.ReadFile(log(root, 1))
			mustDo(t, err)
			mustDo(t, os.WriteFile(log(root, 2), data, 0o644))
		}, false, "added twice"},
		{"data file missing", func(t *testing.T, root string) { mustDo(t, os.Remove(filepath.Join(root, addV1))) }, false, "not on disk"},
		{"data file truncated", func(t *testing.T, root string) { mustDo(t, os.Truncate(filepath.Join(root, addV1), 10)) }, false, "the file has 10"},
		{"torn commit", func(t *testing.T, root string) { mustDo(t, os.WriteFile(log(root, 2), []byte(`{"add":{"pa`), 0o644)) }, false, "torn"},
		{"acknowledged append missing", func(*testing.T, string) {}, true, "no commit holds it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := testenv.CopyFixture(t, fixtureAppend)
			c.damage(t, root)
			rec := &auditRecorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				a := auditTable(rec, root)
				a.checkConsistent(rec, root, 0)
				a.checkAppends(rec, root, map[string][32]byte{"x.parquet": {}}, map[string]bool{"x.parquet": c.acked}, nil)
			}()
			<-done
			got := strings.Join(rec.msgs, "\n")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("audit said %q, want a failure naming %q", got, c.want)
			}
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
