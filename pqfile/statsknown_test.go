package pqfile

import (
	"bytes"
	"reflect"
	"testing"
)

// markInexact returns the encoded footer b with is_min_value_exact=false
// appended to the statistics of the chunks inexact names, as a writer
// that truncates its bounds writes them.
func markInexact(t *testing.T, b []byte, inexact func(rg, col int) bool) []byte {
	t.Helper()
	var ss []splice
	err := thriftBuf(b).walkChunkMeta(nil, func(rg, col int, md []tfield) error {
		if !inexact(rg, col) {
			return nil
		}
		for _, f := range md {
			if !isStats(f) {
				continue
			}
			fields, end, err := thriftBuf(b).walkStruct(f.value, 0, nil)
			if err != nil {
				return err
			}
			prev := int16(0)
			if len(fields) > 0 {
				prev = fields[len(fields)-1].id
			}
			// before the struct's stop byte
			ss = append(ss, splice{start: end - 1, end: end - 1, with: appendFieldHeader(nil, prev, idStatsMinExact, tFalse)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return applySplices(b, ss)
}

func TestFooterChunkStats(t *testing.T) {
	plain := ncFile(t)
	src := craftStats(t, plain, ncEdits)
	f, err := readFooter(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	inexact := func(rg, col int) bool { return rg == 0 && col == 2 || rg == 4 && col == 0 }
	marked := markInexact(t, f.raw, inexact)
	var meta = f.meta
	if err := decodeFooter(marked, &meta); err != nil {
		t.Fatalf("the marked footer does not decode: %v", err)
	}
	got, err := FooterChunkStats(marked, &meta)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]ChunkStats, len(meta.RowGroups))
	for i := range want {
		want[i] = make([]ChunkStats, len(meta.RowGroups[i].Columns))
		for j := range want[i] {
			e := editAt(ncEdits, i, j)
			want[i][j] = ChunkStats{NullCount: e == keepStats, Inexact: inexact(i, j) && e != dropStats}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FooterChunkStats =\n %v\nwant\n %v", got, want)
	}
}
