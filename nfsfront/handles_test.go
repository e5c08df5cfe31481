package nfsfront

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The journal gives a restarted server the handles of the run before;
// torn and foreign lines are skipped; the journal is rewritten at start,
// so it holds each handle once.
func TestHandleJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	h := newHandles(path, nil)
	for _, p := range []string{"t/@v1/a.parquet", "t/@v1/b.parquet", "t/@v2/a.parquet", "t/@v1/a.parquet"} {
		h.add(handleOf(p), p)
	}
	h.close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A crash tore the last line; a line names a path its hash does not.
	torn := string(data) + "0011 t/@v9/x.parquet\n" + strings.Repeat("ab", handleSize) + " t/@v3/forged.parquet\n" + "deadbeef"
	if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	h2 := newHandles(path, nil)
	defer h2.close()
	for _, p := range []string{"t/@v1/a.parquet", "t/@v1/b.parquet", "t/@v2/a.parquet"} {
		if got, ok := h2.get(handleOf(p)); !ok || got != p {
			t.Errorf("after restart: %s -> %q, %v", p, got, ok)
		}
	}
	if _, ok := h2.get([handleSize]byte([]byte(strings.Repeat("\xab", handleSize)))); ok {
		t.Error("a forged line was taken")
	}
	if h2.paths.Len() != 3 {
		t.Errorf("%d handles after restart, want 3", h2.paths.Len())
	}
	data, _ = os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != 3 {
		t.Errorf("journal rewritten with %d lines, want 3:\n%s", n, data)
	}
}
