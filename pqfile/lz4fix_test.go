package pqfile

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

type lz4Row struct {
	ID int64 `parquet:"id,plain"`
	V  int64 `parquet:"v,plain"`
}

// LZ4_RAW pages that compress less than 3x (random integers) decode to
// their values, through parquet-go's reader and through a rewrite that
// removes deleted rows: parquet-go v0.32.0 alone read every value wrong,
// without an error (lz4fix.go).
func TestLZ4RawPagesDecode(t *testing.T) {
	if _, ok := parquet.LookupCompressionCodec(format.Lz4Raw).(*lz4RawCodec); !ok {
		t.Fatal("parquet-go's LZ4_RAW codec is not replaced: its codec table changed")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]lz4Row, 20000)
	for i := range rows {
		rows[i] = lz4Row{int64(i), int64(rng.Uint64())}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[lz4Row](&buf, parquet.Compression(&parquet.Lz4Raw), parquet.MaxRowsPerRowGroup(5000))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src := buf.Bytes()
	read := func(b []byte) []lz4Row {
		t.Helper()
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]lz4Row, f.NumRows())
		n, err := parquet.NewGenericReader[lz4Row](f).Read(out)
		if int64(n) != f.NumRows() {
			t.Fatalf("read %d of %d rows: %v", n, f.NumRows(), err)
		}
		return out
	}
	bad := 0
	for i, r := range read(src) {
		if r != rows[i] {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d rows read back wrong from LZ4_RAW pages", bad, len(rows))
	}
	// A rewrite re-encodes the row groups with deleted rows from decoded pages.
	del := roaring64.BitmapOf(3, 5001, 12345, 19999)
	var out bytes.Buffer
	if _, err := Rewrite(bytes.NewReader(src), int64(len(src)), del, nil, &out); err != nil {
		t.Fatal(err)
	}
	got := read(out.Bytes())
	k := 0
	for i, r := range rows {
		if del.Contains(uint64(i)) {
			continue
		}
		if got[k] != r {
			t.Fatalf("rewritten row %d is %+v, want %+v", k, got[k], r)
		}
		k++
	}
}
