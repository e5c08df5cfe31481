package pqfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// fixtureTables are real tables written by Spark, delta-rs and delta-kernel whose data files
// cover DV tables, all primitive types, nested structs, maps, arrays of structs, INT96
// timestamps, decimals and column mapping.
var fixtureTables = []string{
	"delta-kernel-rs/golden-dv-partitioned-with-checkpoint",
	"delta/spark-table-with-dv-large",
	"delta-kernel-rs/golden-parquet-all-types",
	"delta-kernel-rs/golden-data-reader-nested-struct",
	"delta-kernel-rs/golden-data-reader-map",
	"delta-kernel-rs/golden-data-reader-array-complex-objects",
	"delta-kernel-rs/golden-kernel-timestamp-int96",
	"delta-kernel-rs/golden-decimal-various-scale-precision",
	"delta-kernel-rs/golden-table-with-columnmapping-mode-name",
}

// dataFiles returns up to max data files of a fixture table, in name order.
func dataFiles(t *testing.T, table string, max int) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(table, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "_delta_log" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no data files under %s", table)
	}
	slices.Sort(files)
	return files[:min(max, len(files))]
}

func TestRewriteFixtures(t *testing.T) {
	forFixtureDeletions(t, fixtureTables, func(t *testing.T, src []byte, dc deletionCase) {
		out, p := rewrite(t, src, dc.del, nil)
		checkOutput(t, src, out, dc.del, p, true)
	})
}

// forFixtureDeletions runs check, as a subtest, on up to 3 data files of each of the fixture
// tables with each of their deletion cases.
func forFixtureDeletions(t *testing.T, tables []string, check func(t *testing.T, src []byte, dc deletionCase)) {
	for _, name := range tables {
		t.Run(name, func(t *testing.T) {
			table := testenv.Fixture(t, name)
			for fi, path := range dataFiles(t, table, 3) {
				src, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				firsts, n := rowGroupBounds(t, src)
				for _, dc := range deletionCases(firsts, n, uint64(fi)) {
					t.Run(filepath.Base(path)+"/"+dc.name, func(t *testing.T) { check(t, src, dc) })
				}
			}
		})
	}
}

// columnMapping reads the physical → logical names and ids of a column-mapped table from the
// metaData action of its first commit.
func columnMapping(t *testing.T, table string) (map[string]string, map[string]int32) {
	t.Helper()
	f, err := os.Open(filepath.Join(table, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var a struct {
			MetaData *struct{ SchemaString string } `json:"metaData"`
		}
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil || a.MetaData == nil {
			continue
		}
		var schema any
		if err := json.Unmarshal([]byte(a.MetaData.SchemaString), &schema); err != nil {
			t.Fatal(err)
		}
		names, ids := map[string]string{}, map[string]int32{}
		collectMapping(schema, names, ids)
		return names, ids
	}
	t.Fatalf("no metaData action in %s", table)
	return nil, nil
}

func collectMapping(v any, names map[string]string, ids map[string]int32) {
	switch x := v.(type) {
	case map[string]any:
		if md, ok := x["metadata"].(map[string]any); ok {
			if phys, ok := md["delta.columnMapping.physicalName"].(string); ok {
				names[phys] = x["name"].(string)
				ids[phys] = int32(md["delta.columnMapping.id"].(float64))
			}
		}
		for _, c := range x {
			collectMapping(c, names, ids)
		}
	case []any:
		for _, c := range x {
			collectMapping(c, names, ids)
		}
	}
}

// mappingRename renames physical names to logical ones (or the reverse) and sets field ids.
func mappingRename(names map[string]string, ids map[string]int32) *Rename {
	return &Rename{
		Name: func(p []string) (string, bool) {
			n, ok := names[p[len(p)-1]]
			return n, ok
		},
		FieldID: func(p []string) (int32, bool) {
			id, ok := ids[p[len(p)-1]]
			return id, ok
		},
	}
}

func TestRenameColumnMapping(t *testing.T) {
	table := testenv.Fixture(t, "delta-kernel-rs/golden-table-with-columnmapping-mode-name")
	toLogical, ids := columnMapping(t, table)
	if len(toLogical) < 10 {
		t.Fatalf("found only %d mapped columns", len(toLogical))
	}
	for _, path := range dataFiles(t, table, 2) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, del := range []*roaring64.Bitmap{nil, roaring64.BitmapOf(0)} {
			out, p := rewrite(t, src, del, mappingRename(toLogical, ids))
			checkOutput(t, src, out, del, p, false)
			om := &footerOf(t, out).meta
			checkRenamed(t, om, ids)
			if del == nil {
				start := footerOf(t, src).start
				if !bytes.Equal(out[:start], src[:start]) {
					t.Errorf("footer-only rename changed bytes before the footer")
				}
			}
			back, _ := rewrite(t, out, nil, reverseRename(t, src, out))
			if sm, bm := footerOf(t, src).meta, footerOf(t, back).meta; !slices.EqualFunc(sm.Schema, bm.Schema, sameName) {
				t.Errorf("logical → physical rename does not restore the source names")
			}
		}
	}
}

// reverseRename maps each logical path of out back to the physical name at the same position in
// src, the way the inbox renames logical → physical by path.
func reverseRename(t *testing.T, src, out []byte) *Rename {
	sm, om := footerOf(t, src).meta, footerOf(t, out).meta
	tree, err := BuildSchemaTree(om.Schema)
	if err != nil {
		t.Fatal(err)
	}
	phys := map[string]string{}
	for i := 1; i < len(om.Schema); i++ {
		p := tree.path(i, func(j int) string { return om.Schema[j].Name })
		phys[strings.Join(p, "\x00")] = sm.Schema[i].Name
	}
	return &Rename{Name: func(p []string) (string, bool) {
		n, ok := phys[strings.Join(p, "\x00")]
		return n, ok
	}}
}

func sameName(a, b format.SchemaElement) bool { return a.Name == b.Name }

// checkRenamed asserts that no physical name remains in the schema, the chunk paths or the
// Spark schema metadata, and that mapped columns carry their field ids.
func checkRenamed(t *testing.T, m *format.FileMetaData, ids map[string]int32) {
	t.Helper()
	logicalID := map[int32]bool{}
	for _, id := range ids {
		logicalID[id] = true
	}
	withID := 0
	for _, e := range m.Schema[1:] {
		if strings.HasPrefix(e.Name, "col-") {
			t.Errorf("schema still names %q", e.Name)
		}
		if logicalID[e.FieldID] {
			withID++
		}
	}
	if withID != len(ids) {
		t.Errorf("%d schema elements carry a mapped field id, want %d", withID, len(ids))
	}
	for _, rg := range m.RowGroups {
		for _, c := range rg.Columns {
			if slices.ContainsFunc(c.MetaData.PathInSchema, func(s string) bool { return strings.HasPrefix(s, "col-") }) {
				t.Errorf("path_in_schema still physical: %q", c.MetaData.PathInSchema)
			}
		}
	}
	for _, kv := range m.KeyValueMetadata {
		if kv.Key == sparkSchemaKey && strings.Contains(kv.Value, `"name":"col-`) {
			t.Errorf("spark schema metadata still names physical columns")
		}
		if kv.Key == arrowSchemaKey {
			t.Errorf("stale arrow schema kept")
		}
	}
}
