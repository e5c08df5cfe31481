package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"pgregory.net/rapid"
)

// cdfModel is the model of a table with the change data feed: its live
// files, each with its rows and the rows its deletion vector deletes,
// after each version.
type cdfModel struct {
	root     string
	rows     map[string]uint64            // every file's row count, by path
	live     map[string]*roaring64.Bitmap // live files' deleted rows, by path
	gone     []string                     // files removed, which a RESTORE may add back
	versions []map[string]bool            // live rows "path#row" after each version
	next     int
}

// commit writes version len(m.versions) with lines and records the live
// rows after it.
func (m *cdfModel) commit(t *rapid.T, lines []string) {
	v := int64(len(m.versions))
	p := filepath.Join(m.root, filepath.FromSlash(CommitKey(v)))
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := map[string]bool{}
	for path, del := range m.live {
		for i := range m.rows[path] {
			if !del.Contains(i) {
				state[fmt.Sprintf("%s#%d", path, i)] = true
			}
		}
	}
	m.versions = append(m.versions, state)
}

// addLine is an add of path with its current deletion vector (inline).
func (m *cdfModel) addLine(t *rapid.T, path string) string {
	a := map[string]any{"path": path, "partitionValues": map[string]any{}, "size": 100, "modificationTime": 1, "dataChange": true,
		"stats": fmt.Sprintf(`{"numRecords":%d}`, m.rows[path])}
	if dv := m.dv(t, m.live[path]); dv != nil {
		a["deletionVector"] = dv
	}
	b, _ := json.Marshal(map[string]any{"add": a})
	return string(b)
}

// removeLine is a remove of path with the deletion vector del.
func (m *cdfModel) removeLine(t *rapid.T, path string, del *roaring64.Bitmap) string {
	r := map[string]any{"path": path, "dataChange": true, "size": 100, "deletionTimestamp": 1}
	if dv := m.dv(t, del); dv != nil {
		r["deletionVector"] = dv
	}
	b, _ := json.Marshal(map[string]any{"remove": r})
	return string(b)
}

// dv is an inline deletion vector of del (nil when del is empty).
func (m *cdfModel) dv(t *rapid.T, del *roaring64.Bitmap) *DeletionVector {
	if del == nil || del.IsEmpty() {
		return nil
	}
	payload, err := EncodeDVBitmap(del)
	if err != nil {
		t.Fatal(err)
	}
	return &DeletionVector{StorageType: "i", PathOrInlineDV: Z85Encode(payload), SizeInBytes: int32(len(payload)), Cardinality: int64(del.GetCardinality())}
}

func (m *cdfModel) newFile(t *rapid.T) string {
	m.next++
	path := fmt.Sprintf("part-%04d.parquet", m.next)
	m.rows[path] = rapid.Uint64Range(1, 20).Draw(t, "rows")
	m.live[path] = roaring64.New()
	return path
}

// step draws one operation and commits it: an append, rows deleted or
// restored through a file's deletion vector, a file removed, an
// overwrite, or a commit that changes no data.
func (m *cdfModel) step(t *rapid.T) {
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range m.live {
			if !yield(p) {
				return
			}
		}
	})
	op := rapid.SampledFrom([]string{"append", "delete", "restore", "remove", "overwrite", "readd", "noop"}).Draw(t, "op")
	if len(paths) == 0 && op != "readd" || op == "readd" && len(m.gone) == 0 {
		op = "append"
	}
	switch op {
	case "append":
		m.commit(t, []string{m.addLine(t, m.newFile(t))})
	case "delete", "restore":
		path := rapid.SampledFrom(paths).Draw(t, "file")
		before := m.live[path].Clone()
		after := before.Clone()
		for range rapid.IntRange(1, 4).Draw(t, "n") {
			i := rapid.Uint64Range(0, m.rows[path]-1).Draw(t, "row")
			if op == "delete" {
				after.Add(i)
			} else {
				after.Remove(i)
			}
		}
		m.live[path] = after
		m.commit(t, []string{m.removeLine(t, path, before), m.addLine(t, path)})
	case "remove":
		path := rapid.SampledFrom(paths).Draw(t, "file")
		line := m.removeLine(t, path, m.live[path])
		delete(m.live, path)
		m.gone = append(m.gone, path)
		m.commit(t, []string{line})
	case "overwrite":
		var lines []string
		for _, p := range paths {
			lines = append(lines, m.removeLine(t, p, m.live[p]))
			delete(m.live, p)
			m.gone = append(m.gone, p)
		}
		m.commit(t, append(lines, m.addLine(t, m.newFile(t))))
	case "readd": // RESTORE TABLE: a removed file back, with a deletion vector of its own
		i := rapid.IntRange(0, len(m.gone)-1).Draw(t, "gone")
		path := m.gone[i]
		m.gone = slices.Delete(m.gone, i, i+1)
		del := roaring64.New()
		for range rapid.IntRange(0, 3).Draw(t, "n") {
			del.Add(rapid.Uint64Range(0, m.rows[path]-1).Draw(t, "row"))
		}
		m.live[path] = del
		m.commit(t, []string{m.addLine(t, path)})
	case "noop":
		m.commit(t, []string{`{"commitInfo":{"timestamp":1,"operation":"OPTIMIZE"}}`})
	}
}

// The change data feed is what turns one snapshot into another: for random
// histories of appends, deletes and restores by deletion vector, removes
// and overwrites, the changes of every range a..b applied to the live rows
// of version a-1 (inserts of rows absent, deletes of rows present) give
// exactly the live rows of version b.
func TestChangesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		root := filepath.Join(os.TempDir(), fmt.Sprintf("deltafs-cdf-model-%d", os.Getpid()))
		os.RemoveAll(root)
		defer os.RemoveAll(root)
		if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
			t.Fatal(err)
		}
		m := &cdfModel{root: root, rows: map[string]uint64{}, live: map[string]*roaring64.Bitmap{}}
		create := append(header(), `{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}`)
		create[1] = strings.Replace(create[1], `"configuration":{}`, `"configuration":{"delta.enableChangeDataFeed":"true"}`, 1)
		m.commit(t, create)
		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			m.step(t)
		}
		tbl := Open(dirStore{root}, Options{})
		last := int64(len(m.versions) - 1)
		from := rapid.Int64Range(0, last).Draw(t, "from")
		to := rapid.Int64Range(from, last).Draw(t, "to")
		state := map[string]bool{}
		if from > 0 {
			state = maps.Clone(m.versions[from-1])
		}
		ctx := context.Background()
		err := tbl.Changes(ctx, from, to, func(f ChangeFile) error {
			keep, drop, err := tbl.Rows(ctx, f)
			if err != nil {
				return err
			}
			for i := range m.rows[f.Path] {
				if keep != nil && !keep.Contains(i) || drop != nil && drop.Contains(i) {
					continue
				}
				row := fmt.Sprintf("%s#%d", f.Path, i)
				switch f.ChangeType {
				case ChangeInsert:
					if state[row] {
						return fmt.Errorf("v%d inserts %s, live already", f.Version, row)
					}
					state[row] = true
				case ChangeDelete:
					if !state[row] {
						return fmt.Errorf("v%d deletes %s, not live", f.Version, row)
					}
					delete(state, row)
				default:
					return fmt.Errorf("v%d: change type %q", f.Version, f.ChangeType)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := m.versions[to]
		if len(state) != len(want) {
			t.Fatalf("v%d..v%d applied to v%d gives %d live rows, v%d has %d", from, to, from-1, len(state), to, len(want))
		}
		for r := range want {
			if !state[r] {
				t.Fatalf("v%d..v%d applied to v%d lacks %s, live at v%d", from, to, from-1, r, to)
			}
		}
	})
}
