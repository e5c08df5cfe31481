package pqfile

import (
	"bytes"
	"io"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
)

// FuzzRewrite feeds arbitrary bytes as a source file with a deletion set derived from seed. The
// package must never panic, and when it succeeds its output must open with parquet-go and, if
// the source's rows are readable, hold exactly the source rows minus the deleted ones.
func FuzzRewrite(f *testing.F) {
	rows := genRows(40)
	f.Add(genFile(f, rows, 10, &parquet.Snappy), uint64(3))
	f.Add(genFile(f, rows, 40, &parquet.Uncompressed), uint64(0))
	f.Add(genFile(f, rows[:5], 2, &parquet.Gzip), uint64(1<<63|5))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"), uint64(1))
	f.Fuzz(func(t *testing.T, src []byte, seed uint64) {
		p, err := NewPlan(bytes.NewReader(src), int64(len(src)), nil, nil)
		if err != nil {
			return
		}
		del := fuzzDeletions(p.NumRows(), seed)
		var out bytes.Buffer
		if _, err := Rewrite(bytes.NewReader(src), int64(len(src)), del, nil, &out); err != nil {
			return
		}
		want, ok := tryReadRows(src)
		of, err := parquet.OpenFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil {
			t.Fatalf("output does not open: %v", err)
		}
		if !ok {
			return
		}
		got, ok := tryReadRows(out.Bytes())
		if !ok {
			t.Fatalf("source rows read but output rows do not")
		}
		if int64(len(got)) != of.NumRows() || int64(len(got)) != int64(len(want))-int64(del.GetCardinality()) {
			t.Fatalf("output has %d rows (footer %d), source %d minus %d deleted",
				len(got), of.NumRows(), len(want), del.GetCardinality())
		}
	})
}

// fuzzDeletions picks rows of [0, n) from seed: none, all, or a pseudo-random subset.
func fuzzDeletions(n int64, seed uint64) *roaring64.Bitmap {
	del := roaring64.New()
	n = min(n, 1<<16)
	switch seed % 4 {
	case 0:
	case 1:
		del.AddRange(0, uint64(n))
	default:
		for i := range uint64(n) {
			if (i*0x9e3779b97f4a7c15^seed)>>61 == 0 {
				del.Add(i)
			}
		}
	}
	return del
}

// tryReadRows reads all rows with parquet-go, reporting false on any error or parquet-go panic.
func tryReadRows(data []byte) (rows []parquet.Row, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, false
	}
	buf := make([]parquet.Row, 64)
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
				r.Close()
				return nil, false
			}
		}
		r.Close()
	}
	return rows, true
}
