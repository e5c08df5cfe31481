package pqfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
)

// ncRow is a flat row (so the page filter applies) with nulls in two optional columns.
type ncRow struct {
	ID   int64   `parquet:"id"`
	Opt  *int32  `parquet:"opt,optional"`
	Name *string `parquet:"name,optional,dict"`
	F    float64 `parquet:"f"`
}

const (
	ncGroups    = 6
	ncGroupRows = 50
)

// ncFile writes ncGroups row groups of ncGroupRows rows, several pages per chunk, with parquet-go
// (which writes statistics with null_count for every chunk).
func ncFile(t testing.TB) []byte {
	t.Helper()
	rows := make([]ncRow, ncGroups*ncGroupRows)
	for i := range rows {
		r := &rows[i]
		r.ID, r.F = int64(i), float64(i)/7
		if i%3 != 0 {
			v := int32(i * 11)
			r.Opt = &v
		}
		if i%5 != 0 {
			s := fmt.Sprint("n", i%9)
			r.Name = &s
		}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[ncRow](&buf, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(ncGroupRows), parquet.PageBufferSize(256))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ncEdits is what the crafted source's chunks lack (columns id, opt, name, f): row groups 0 and
// 5 are as parquet-go wrote them.
var ncEdits = [][]statsEdit{
	nil,
	{keepStats, dropNullCount, dropStats, keepStats},
	{dropStats, dropStats, dropStats, dropStats},
	{dropNullCount, dropNullCount, dropNullCount, dropNullCount},
	{keepStats, dropStats, dropNullCount, keepStats},
	nil,
}

// craftStats returns src with its footer rewritten so that the chunks named by edits have no
// statistics or no null_count, as written by a writer with statistics disabled.
func craftStats(t testing.TB, src []byte, edits [][]statsEdit) []byte {
	t.Helper()
	f, err := readFooter(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	body, err := stripStats(f.raw, edits)
	if err != nil {
		t.Fatal(err)
	}
	out := append(slices.Clone(src[:f.start]), body...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	return append(out, magic...)
}

// ncSource is the crafted source, checked: parquet-go reads the same rows as from the file it was
// made from, and the footer lacks exactly what ncEdits says.
func ncSource(t *testing.T) []byte {
	t.Helper()
	plain := ncFile(t)
	src := craftStats(t, plain, ncEdits)
	if bytes.Equal(src, plain) {
		t.Fatal("crafting changed nothing")
	}
	_, want := readRows(t, plain)
	_, got := readRows(t, src) // fails the test if parquet-go cannot open it
	if !reflect.DeepEqual(got, want) {
		t.Fatal("crafted source reads other rows")
	}
	if got := footerEdits(t, src); !reflect.DeepEqual(got, ncEdits) {
		t.Fatalf("crafted source lacks %v, want %v", got, ncEdits)
	}
	return src
}

// footerEdits returns what each column chunk of data's footer lacks.
func footerEdits(t *testing.T, data []byte) [][]statsEdit {
	t.Helper()
	f := footerOf(t, data)
	edits, err := statsEdits(f.raw, &f.meta)
	if err != nil {
		t.Fatal(err)
	}
	return edits
}

// chunkNulls counts the null values of every column chunk of data.
func chunkNulls(t *testing.T, data []byte) [][]int64 {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]int64
	buf := make([]parquet.Value, 64)
	for _, rg := range f.RowGroups() {
		var counts []int64
		for _, c := range rg.ColumnChunks() {
			r := parquet.NewColumnChunkValueReader(c)
			var nulls int64
			for {
				n, err := r.ReadValues(buf)
				for _, v := range buf[:n] {
					if v.IsNull() {
						nulls++
					}
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			r.Close()
			counts = append(counts, nulls)
		}
		out = append(out, counts)
	}
	return out
}

// checkNullCounts asserts the output's statistics: a copied chunk lacks exactly what its source
// lacked and otherwise has the source's statistics; a re-encoded chunk has an exact null_count.
func checkNullCounts(t *testing.T, src, out []byte, p *Plan) {
	t.Helper()
	sm, om := &footerOf(t, src).meta, &footerOf(t, out).meta
	srcEdits, outEdits, nulls := footerEdits(t, src), footerEdits(t, out), chunkNulls(t, out)
	k := 0
	for i, a := range p.Actions() {
		if a == Drop {
			continue
		}
		for j := range om.RowGroups[k].Columns {
			ss, os := sm.RowGroups[i].Columns[j].MetaData.Statistics, om.RowGroups[k].Columns[j].MetaData.Statistics
			got, exact := editAt(outEdits, k, j), os.NullCount == nulls[k][j]
			switch want := editAt(srcEdits, i, j); {
			case a == Copy && got != want:
				t.Errorf("copied rg %d col %d: lacks %v, source lacked %v", i, j, got, want)
			case a == Copy && !reflect.DeepEqual(os, ss):
				t.Errorf("copied rg %d col %d: statistics %+v, source %+v", i, j, os, ss)
			case a == Copy && want == keepStats && !exact:
				t.Errorf("copied rg %d col %d: null_count %d, %d nulls", i, j, os.NullCount, nulls[k][j])
			case a == Reencode && (got != keepStats || !exact):
				t.Errorf("re-encoded rg %d col %d: lacks %v, null_count %d, %d nulls", i, j, got, os.NullCount, nulls[k][j])
			}
		}
		k++
	}
}

// ncDeletes returns rows of the given row groups to delete: every 4th row, or all rows for a
// group listed in whole.
func ncDeletes(groups []int, whole ...int) *roaring64.Bitmap {
	del := roaring64.New()
	for _, g := range groups {
		for r := range uint64(ncGroupRows) {
			if r%4 == 1 || slices.Contains(whole, g) {
				del.Add(uint64(g*ncGroupRows) + r)
			}
		}
	}
	return del
}

func TestNullCountPresence(t *testing.T) {
	src := ncSource(t)
	rename := &Rename{Name: func(path []string) (string, bool) { return "opt_renamed", path[0] == "opt" }}
	tests := []struct {
		name    string
		del     *roaring64.Bitmap
		rename  *Rename
		actions []Action
	}{
		{"footer-only", nil, nil, []Action{Copy, Copy, Copy, Copy, Copy, Copy}},
		{"footer-only-rename", nil, rename, []Action{Copy, Copy, Copy, Copy, Copy, Copy}},
		{"some-groups", ncDeletes([]int{0, 2, 4, 5}, 5), nil, []Action{Reencode, Copy, Reencode, Copy, Reencode, Drop}},
		{"copy-only", ncDeletes([]int{0}, 0), rename, []Action{Drop, Copy, Copy, Copy, Copy, Copy}},
		{"all-groups", ncDeletes([]int{0, 1, 2, 3, 4, 5}), nil, slices.Repeat([]Action{Reencode}, ncGroups)},
	}
	for _, tc := range tests {
		for _, off := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pagefilter-off=%v", tc.name, off), func(t *testing.T) {
				pageFilterOff.Store(off)
				defer pageFilterOff.Store(false)
				seen := observe(t)
				out, p := rewrite(t, src, tc.del, tc.rename)
				if !slices.Equal(p.Actions(), tc.actions) {
					t.Fatalf("actions %v, want %v", p.Actions(), tc.actions)
				}
				for g, why := range seen() {
					if (why == nil) == off {
						t.Errorf("row group %d: page filter off=%v, but served with why=%v", g, off, why)
					}
				}
				checkOutput(t, src, out, tc.del, p, tc.rename == nil)
				checkNullCounts(t, src, out, p)
				if tc.name == "footer-only" && !bytes.Equal(out, src) {
					t.Errorf("footer-only rewrite without rename differs from its source")
				}
			})
		}
	}
}

// TestNullCountUnchangedSource checks that a source whose every chunk has statistics with
// null_count gets the footer parquet-go encodes, with no edit.
func TestNullCountUnchangedSource(t *testing.T) {
	src := ncFile(t)
	if e := footerEdits(t, src); hasEdits(e) {
		t.Fatalf("parquet-go source lacks %v", e)
	}
	out, p := rewrite(t, src, ncDeletes([]int{1}), nil)
	checkNullCounts(t, src, out, p)
	if e := footerEdits(t, out); hasEdits(e) {
		t.Errorf("output lacks %v", e)
	}
}

// TestDuckDBNullCountCopied asks DuckDB for the nulls of outputs whose row groups are all copied
// from a source written without null counts (no statistics for opt, statistics without null_count
// for name). DuckDB drops an "x IS NULL" filter, answering 0, when every row group's statistics
// say null_count = 0.
func TestDuckDBNullCountCopied(t *testing.T) {
	edits := slices.Repeat([][]statsEdit{{keepStats, dropStats, dropNullCount, keepStats}}, ncGroups)
	src := craftStats(t, ncFile(t), edits)
	rename := &Rename{Name: func(path []string) (string, bool) { return path[0] + "_r", true }}
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		del    *roaring64.Bitmap
		rename *Rename
	}{
		{"footer-only", nil, nil},
		{"footer-only-rename", nil, rename},
		{"copied", ncDeletes([]int{0, 3}, 0, 3), nil},
	} {
		out, _ := rewrite(t, src, tc.del, tc.rename)
		path := filepath.Join(dir, tc.name+".parquet")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		_, rows := readRows(t, out)
		var optNulls, nameNulls int64
		for _, r := range rows {
			optNulls += int64(btoi(r[1].IsNull()))
			nameNulls += int64(btoi(r[2].IsNull()))
		}
		if optNulls == 0 || nameNulls == 0 {
			t.Fatalf("%s: %d and %d nulls, want some", tc.name, optNulls, nameNulls)
		}
		opt, name := "opt", "name"
		if tc.rename != nil {
			opt, name = "opt_r", "name_r"
		}
		from := " from read_parquet('" + path + "') where "
		got := duckQuery(t, "select (select count(*)"+from+opt+" is null)::VARCHAR o, "+
			"(select count(*)"+from+name+" is null)::VARCHAR n")
		if got[0]["o"] != itoa(optNulls) || got[0]["n"] != itoa(nameNulls) {
			t.Errorf("%s: duckdb counts %v nulls in opt, %v in name; want %d, %d",
				tc.name, got[0]["o"], got[0]["n"], optNulls, nameNulls)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
