package writeback

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/delta/blobstore"
)

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// openTable opens a local table through the real blob store adapter.
func openTable(t testing.TB, dir string) *delta.Table {
	t.Helper()
	st, err := blobstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("open store %s: %v", dir, err)
	}
	t.Cleanup(func() { st.Close() })
	return delta.Open(st, delta.Options{})
}

func newCommitter(t *testing.T, dir string) *Committer {
	t.Helper()
	c := New(openTable(t, dir), Options{EngineInfo: "deltafs/test"})
	t.Cleanup(c.Close)
	return c
}

func latest(t *testing.T, dir string) *delta.Snapshot {
	t.Helper()
	s, err := openTable(t, dir).Latest(context.Background())
	if err != nil {
		t.Fatalf("latest snapshot of %s: %v", dir, err)
	}
	return s
}

// writeParquet writes rows of T (parquet-go struct tags give the names and
// types) as a snappy Parquet file and returns its path.
func writeParquet[T any](t testing.TB, name string, rows []T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&parquet.Snappy))
	if _, err := w.Write(rows); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close writer %s: %v", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// readRows reads all rows of a Parquet file, with its leaf column names.
func readRows(t *testing.T, path string) ([]parquet.Row, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	var names []string
	for _, p := range pf.Schema().Columns() {
		names = append(names, filepath.Join(p...))
	}
	var out []parquet.Row
	for _, rg := range pf.RowGroups() {
		rr := rg.Rows()
		buf := make([]parquet.Row, 64)
		for {
			n, err := rr.ReadRows(buf)
			for _, r := range buf[:n] {
				out = append(out, r.Clone())
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read rows of %s: %v", path, err)
			}
		}
		rr.Close()
	}
	return out, names
}

// commitActions returns the raw JSON lines of a commit, decoded.
func commitLines(t *testing.T, dir string, v int64) []map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(delta.CommitKey(v))))
	if err != nil {
		t.Fatalf("read commit %d: %v", v, err)
	}
	var out []map[string]json.RawMessage
	err = action.Parse(data, func(*delta.Action) error { return nil })
	if err != nil {
		t.Fatalf("commit %d does not parse: %v", v, err)
	}
	for _, line := range splitLines(data) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("commit %d line %q: %v", v, line, err)
		}
		out = append(out, m)
	}
	return out
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}

// totalRecords sums numRecords over the live files of a snapshot.
func totalRecords(t *testing.T, s *delta.Snapshot) int64 {
	t.Helper()
	var n int64
	for _, a := range s.Files() {
		r, ok := a.NumRecords()
		if !ok {
			t.Fatalf("file %s has no numRecords", a.Path)
		}
		n += r
	}
	return n
}

// addFor finds the live add whose data key is key.
func addFor(t *testing.T, s *delta.Snapshot, key string) *delta.Add {
	t.Helper()
	for _, a := range s.Files() {
		k, err := s.DataKey(a)
		if err == nil && k == key {
			return a
		}
	}
	t.Fatalf("no live file with key %s in version %d", key, s.Version())
	return nil
}

// listFiles returns every regular file under dir (relative paths).
func listFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return out
}
