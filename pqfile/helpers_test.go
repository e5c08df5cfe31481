package pqfile

import (
	"bytes"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// rewrite runs NewPlan + WriteTo on src and checks the plan's size promise and that a second
// WriteTo writes the same bytes.
func rewrite(t *testing.T, src []byte, del *roaring64.Bitmap, rn *Rename) ([]byte, *Plan) {
	t.Helper()
	p, err := NewPlan(bytes.NewReader(src), int64(len(src)), del, rn)
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	var out bytes.Buffer
	n, err := p.WriteTo(&out)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(out.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, out.Len())
	}
	if size, ok := p.Size(); ok && size != n {
		t.Fatalf("planned size %d, wrote %d", size, n)
	}
	var again bytes.Buffer
	if _, err := Rewrite(bytes.NewReader(src), int64(len(src)), del, rn, &again); err != nil {
		t.Fatalf("Rewrite: %v", err)
	}
	if !bytes.Equal(again.Bytes(), out.Bytes()) {
		t.Fatalf("Rewrite and Plan.WriteTo wrote different bytes")
	}
	checkLayout(t, src, p, out.Bytes())
	return out.Bytes(), p
}

// readRows opens data with parquet-go and returns all its rows in order.
func readRows(t *testing.T, data []byte) (*parquet.File, []parquet.Row) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("open output: %v", err)
	}
	var rows []parquet.Row
	buf := make([]parquet.Row, 128)
	for _, rg := range f.RowGroups() {
		r := rg.Rows()
		for {
			n, err := r.ReadRows(buf)
			for _, row := range buf[:n] {
				rows = append(rows, row.Clone())
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read rows: %v", err)
			}
		}
		r.Close()
	}
	return f, rows
}

// footerOf decodes a file's footer with the package's own decoder.
func footerOf(t testing.TB, data []byte) *footer {
	t.Helper()
	f, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("read footer: %v", err)
	}
	return f
}

// checkOutput asserts everything the package promises about out, the rewrite of src without
// del: rows, schema, codec per column, key-value metadata, created_by, and raw bytes of copied
// row groups. sameSchema is false when a rename was applied.
func checkOutput(t *testing.T, src, out []byte, del *roaring64.Bitmap, p *Plan, sameSchema bool) {
	t.Helper()
	_, srcRows := readRows(t, src)
	_, outRows := readRows(t, out)
	var want []parquet.Row
	for i, r := range srcRows {
		if del == nil || !del.Contains(uint64(i)) {
			want = append(want, r)
		}
	}
	if len(outRows) != len(want) {
		t.Fatalf("output has %d rows, want %d", len(outRows), len(want))
	}
	for i := range want {
		if !outRows[i].Equal(want[i]) {
			t.Fatalf("row %d differs:\n got %v\nwant %v", i, outRows[i], want[i])
		}
	}
	sf, of := footerOf(t, src), footerOf(t, out)
	if of.meta.NumRows != int64(len(want)) || p.NumRows() != int64(len(want)) {
		t.Errorf("num_rows %d, plan %d, want %d", of.meta.NumRows, p.NumRows(), len(want))
	}
	if sameSchema && !reflect.DeepEqual(sf.meta.Schema, of.meta.Schema) {
		t.Errorf("schema changed:\n got %+v\nwant %+v", of.meta.Schema, sf.meta.Schema)
	}
	if sameSchema && !reflect.DeepEqual(sf.meta.KeyValueMetadata, of.meta.KeyValueMetadata) {
		t.Errorf("key-value metadata changed")
	}
	if sf.meta.CreatedBy != of.meta.CreatedBy {
		t.Errorf("created_by %q, want %q", of.meta.CreatedBy, sf.meta.CreatedBy)
	}
	checkGroups(t, src, out, &sf.meta, &of.meta, p)
}

// checkGroups pairs output row groups with their source row groups and checks codecs, physical
// types, ordinals, and that copied groups have byte-identical chunks.
func checkGroups(t *testing.T, src, out []byte, sm, om *format.FileMetaData, p *Plan) {
	t.Helper()
	k := 0
	for i, a := range p.Actions() {
		if a == Drop {
			continue
		}
		if k >= len(om.RowGroups) {
			t.Fatalf("output has only %d row groups", len(om.RowGroups))
		}
		srg, org := &sm.RowGroups[i], &om.RowGroups[k]
		if int(org.Ordinal) != k {
			t.Errorf("row group %d has ordinal %d", k, org.Ordinal)
		}
		for j := range srg.Columns {
			sc, oc := &srg.Columns[j].MetaData, &org.Columns[j].MetaData
			if sc.Codec != oc.Codec || sc.Type != oc.Type {
				t.Errorf("rg %d col %d: codec/type %v/%v, want %v/%v", k, j, oc.Codec, oc.Type, sc.Codec, sc.Type)
			}
			if a == Copy && !bytes.Equal(chunkBytes(t, src, sm, i, j), chunkBytes(t, out, om, k, j)) {
				t.Errorf("copied rg %d col %d: chunk bytes differ", i, j)
			}
		}
		k++
	}
	if k != len(om.RowGroups) {
		t.Errorf("output has %d row groups, plan keeps %d", len(om.RowGroups), k)
	}
}

func chunkBytes(t *testing.T, data []byte, m *format.FileMetaData, rg, col int) []byte {
	t.Helper()
	r, err := chunkRange(&m.RowGroups[rg].Columns[col], int64(len(data))-trailerLen)
	if err != nil {
		t.Fatalf("chunk range: %v", err)
	}
	return data[r.off : r.off+r.n]
}

// rowGroupBounds returns the first row of each row group and the total row count.
func rowGroupBounds(t *testing.T, data []byte) ([]int64, int64) {
	t.Helper()
	var firsts []int64
	var n int64
	for _, rg := range footerOf(t, data).meta.RowGroups {
		firsts = append(firsts, n)
		n += rg.NumRows
	}
	return firsts, n
}

// deletionCase is a named deletion set over a file.
type deletionCase struct {
	name string
	del  *roaring64.Bitmap
}

// deletionCases returns the edge and random deletion sets for a file of n rows whose row groups
// start at firsts.
func deletionCases(firsts []int64, n int64, seed uint64) []deletionCase {
	rng := rand.New(rand.NewPCG(seed, 7))
	bm := func(vals ...uint64) *roaring64.Bitmap { return roaring64.BitmapOf(vals...) }
	end := func(g int) int64 {
		if g+1 < len(firsts) {
			return firsts[g+1]
		}
		return n
	}
	cases := []deletionCase{{"none", nil}, {"empty", roaring64.New()}}
	if n == 0 {
		return cases
	}
	all := roaring64.New()
	all.AddRange(0, uint64(n))
	cases = append(cases,
		deletionCase{"all", all},
		deletionCase{"first", bm(0)},
		deletionCase{"last", bm(uint64(n - 1))},
	)
	g := len(firsts) / 2
	whole := roaring64.New()
	whole.AddRange(uint64(firsts[g]), uint64(end(g)))
	cases = append(cases, deletionCase{"whole-group", whole})
	one, every, random := roaring64.New(), roaring64.New(), roaring64.New()
	for i := range firsts {
		lo, hi := firsts[i], end(i)
		for r := lo; r < hi; r++ {
			if i == g && rng.IntN(3) == 0 {
				one.Add(uint64(r))
			}
			if rng.IntN(5) == 0 {
				every.Add(uint64(r))
			}
			if rng.IntN(2) == 0 {
				random.Add(uint64(r))
			}
		}
		if hi > lo {
			every.Add(uint64(lo)) // at least one delete in every group
		}
	}
	return append(cases,
		deletionCase{"one-group", one},
		deletionCase{"all-groups", every},
		deletionCase{"random-half", random})
}
