package pqfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// withFooter returns src with its footer replaced by edit's change of it (data bytes unchanged).
func withFooter(t *testing.T, src []byte, edit func(m *format.FileMetaData)) []byte {
	t.Helper()
	f := footerOf(t, src)
	edit(&f.meta)
	tail, err := encodeFooter(&f.meta)
	if err != nil {
		t.Fatal(err)
	}
	return append(slices.Clone(src[:f.start]), tail...)
}

// overwriteHeader returns src with the first bytes of the page header of row group 1, column 2
// replaced by junk.
func overwriteHeader(t *testing.T, src []byte) []byte {
	t.Helper()
	md := &footerOf(t, src).meta.RowGroups[1].Columns[2].MetaData
	out := bytes.Clone(src)
	copy(out[md.DataPageOffset:], []byte{0xff, 0xff, 0xff, 0xff})
	return out
}

func TestPageFilterCorrupt(t *testing.T) {
	const per = 1000
	src := flatFile(t, flatRows(3*per, 4), per, parquet.Compression(&parquet.Uncompressed))
	col := func(rg, j int, fn func(md *format.ColumnMetaData)) func(m *format.FileMetaData) {
		return func(m *format.FileMetaData) { fn(&m.RowGroups[rg].Columns[j].MetaData) }
	}
	fewerRows := func(m *format.FileMetaData) {
		m.NumRows -= 10
		m.RowGroups[1].NumRows -= 10
		for j := range m.RowGroups[1].Columns {
			m.RowGroups[1].Columns[j].MetaData.NumValues -= 10
		}
	}
	cases := []struct {
		name, column, want string
		data               []byte
	}{
		{"value count", "i32", "holds 1001 values", withFooter(t, src, col(1, 2, func(md *format.ColumnMetaData) { md.NumValues++ }))},
		{"truncated chunk", "s", "overruns the chunk", withFooter(t, src, col(1, 11, func(md *format.ColumnMetaData) { md.TotalCompressedSize -= 5 }))},
		{"more rows than the footer", "b", "more than the row group's 990 rows", withFooter(t, src, fewerRows)},
		{"page CRC", "i32", "CRC", flipValueByte(t, src)},
		{"junk header", "i32", "bad page header", overwriteHeader(t, src)},
	}
	del := roaring64.New()
	for r := uint64(per); r < 2*per-20; r += 3 {
		del.Add(r)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Rewrite(bytes.NewReader(c.data), int64(len(c.data)), del, nil, &out)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			for _, s := range []string{"row group 1", `column "` + c.column + `"`, c.want} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestPageFilterKeepsUntouchedPages checks that one deleted row costs a page per column, not the
// row group: the Layout's patch (produced bytes) is a small part of the group.
func TestPageFilterKeepsUntouchedPages(t *testing.T) {
	const per = 4000
	src := flatFile(t, flatRows(3*per, 5), per, parquet.Compression(&parquet.Snappy))
	p, err := NewPlan(bytes.NewReader(src), int64(len(src)), roaring64.BitmapOf(per+per/2), nil)
	if err != nil {
		t.Fatal(err)
	}
	var patch bytes.Buffer
	if _, err := p.WriteLayout(&patch); err != nil {
		t.Fatal(err)
	}
	group := footerOf(t, src).meta.RowGroups[1].TotalCompressedSize
	footer := int64(len(src)) - footerOf(t, src).start
	if got := int64(patch.Len()) - footer; got <= 0 || got > group/10 {
		t.Errorf("patch holds %d bytes besides the footer, row group is %d", got, group)
	}
}

// FuzzPageFilter feeds arbitrary bytes (seeded with flat files the page filter serves) with a
// pseudo-random deletion set and compares the page filter with parquet-go's re-encoding. Nothing
// may panic; the output of a source parquet-go opens must open; when parquet-go re-encodes the
// same bytes twice (on some corrupt pages it reads stale buffer bytes), the rows of both outputs
// must be equal, if every column chunk of the source holds as many values as its row group has
// rows. (Rows are not compared with the source's: parquet-go's row reader misassembles some
// corrupt schemas, while both rewrites work column by column.)
func FuzzPageFilter(f *testing.F) {
	rows := flatRows(60, 6)
	f.Add(flatFile(f, rows, 20, parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(1)), uint64(2))
	f.Add(flatFile(f, rows, 60, parquet.Compression(&parquet.Uncompressed)), uint64(3))
	f.Add(flatFile(f, rows[:9], 4, parquet.Compression(&parquet.Gzip), parquet.DictionaryMaxBytes(16)), uint64(1<<62|2))
	f.Fuzz(func(t *testing.T, src []byte, seed uint64) {
		p, err := NewPlan(bytes.NewReader(src), int64(len(src)), nil, nil)
		if err != nil {
			return
		}
		del := fuzzDeletions(p.NumRows(), seed|2) // a pseudo-random subset: row groups to filter
		out, err := rewriteWith(src, del, false)
		if err != nil || opens(src) != nil {
			return // kept bytes (a page index) may be what parquet-go refuses
		}
		if !countsAgree(src) {
			return // parquet-go reads such pages past their end, with stale bytes
		}
		if err := opens(out); err != nil {
			t.Fatalf("output does not open: %v", err)
		}
		slow, err1 := rewriteWith(src, del, true)
		again, err2 := rewriteWith(src, del, true)
		if err1 != nil || err2 != nil || !bytes.Equal(slow, again) {
			return // parquet-go failed, or read stale bytes on a corrupt page
		}
		want, ok1 := tryReadRows(slow)
		got, ok2 := tryReadRows(out)
		if !ok1 {
			return
		}
		if !ok2 || len(got) != len(want) {
			t.Fatalf("page filter: %d rows (read %v), parquet-go: %d", len(got), ok2, len(want))
		}
		for i := range got {
			if !got[i].Equal(want[i]) {
				t.Fatalf("row %d: page filter %v, parquet-go %v", i, got[i], want[i])
			}
		}
	})
}

// rewriteWith rewrites src without del, with the page filter off if asked.
func rewriteWith(src []byte, del *roaring64.Bitmap, off bool) ([]byte, error) {
	pageFilterOff.Store(off)
	defer pageFilterOff.Store(false)
	var out bytes.Buffer
	_, err := Rewrite(bytes.NewReader(src), int64(len(src)), del, nil, &out)
	return out.Bytes(), err
}

// opens reports whether parquet-go opens data, turning its panics into errors.
func opens(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet-go panicked: %v", r)
		}
	}()
	_, err = parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	return err
}

// countsAgree reports whether parquet-go reads from every column chunk of data as many values as
// its row group has rows (a flat file's invariant).
func countsAgree(data []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return false
	}
	buf := make([]parquet.Value, 256)
	for _, rg := range f.RowGroups() {
		for _, cc := range rg.ColumnChunks() {
			r := parquet.NewColumnChunkValueReader(cc)
			var n int64
			for {
				k, err := r.ReadValues(buf)
				n += int64(k)
				if err != nil {
					break
				}
			}
			r.Close()
			if n != rg.NumRows() {
				return false
			}
		}
	}
	return true
}
