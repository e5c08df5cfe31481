package pqfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/deprecated"
)

type genInner struct {
	A int32   `parquet:"a"`
	B *string `parquet:"b,optional"`
}

type genRow struct {
	ID    int64            `parquet:"id"`
	Name  string           `parquet:"name,dict"`
	Opt   *int32           `parquet:"opt,optional"`
	Tags  []string         `parquet:"tags,list"`
	Inner genInner         `parquet:"inner"`
	Items []genInner       `parquet:"items,list"`
	M     map[string]int64 `parquet:"m"`
	F     float64          `parquet:"f"`
	Ts    deprecated.Int96 `parquet:"ts"`
	Blob  []byte           `parquet:"blob,optional"`
}

// genRows makes n rows mixing nulls, empty and long lists, repeated dictionary values and
// nested structs.
func genRows(n int) []genRow {
	rows := make([]genRow, n)
	for i := range rows {
		r := &rows[i]
		r.ID = int64(i)
		r.Name = fmt.Sprintf("name-%d", i%13)
		if i%3 != 0 {
			v := int32(i * 7)
			r.Opt = &v
		}
		for k := range i % 5 {
			r.Tags = append(r.Tags, fmt.Sprintf("t%d-%d", i, k))
		}
		s := fmt.Sprint("b", i)
		r.Inner = genInner{A: int32(-i)}
		if i%4 != 0 {
			r.Inner.B = &s
		}
		for k := range i % 3 {
			r.Items = append(r.Items, genInner{A: int32(k), B: &s})
		}
		if i%2 == 0 {
			r.M = map[string]int64{"x": int64(i), fmt.Sprint("k", i%7): -1}
		}
		r.F = float64(i) / 3
		r.Ts = deprecated.Int96{uint32(i), uint32(i >> 3), 2440588}
		if i%6 != 0 {
			r.Blob = bytes.Repeat([]byte{byte(i)}, i%17)
		}
	}
	return rows
}

// genFile writes rows in groups of rowsPerGroup with small pages, so chunks have many pages.
func genFile(t testing.TB, rows []genRow, rowsPerGroup int64, codec compress.Codec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[genRow](&buf,
		parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(rowsPerGroup),
		parquet.PageBufferSize(2048),
		parquet.KeyValueMetadata("origin", "pqfile-test"),
	)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var testCodecs = []compress.Codec{
	&parquet.Snappy, &parquet.Gzip, &parquet.Zstd, &parquet.Lz4Raw, &parquet.Uncompressed,
}

func TestRewriteGeneratedMultiRowGroup(t *testing.T) {
	rows := genRows(2400)
	for _, codec := range testCodecs {
		src := genFile(t, rows, 300, codec)
		firsts, n := rowGroupBounds(t, src)
		if len(firsts) != 8 {
			t.Fatalf("generated %d row groups, want 8", len(firsts))
		}
		for _, dc := range deletionCases(firsts, n, 1) {
			t.Run(codec.String()+"/"+dc.name, func(t *testing.T) {
				// LZ4_RAW is re-encoded too, with parquet-go's decoder fixed
				// (lz4fix.go).
				out, p := rewrite(t, src, dc.del, nil)
				checkOutput(t, src, out, dc.del, p, true)
			})
		}
	}
}

func TestPlanActions(t *testing.T) {
	src := genFile(t, genRows(800), 100, &parquet.Snappy)
	firsts, n := rowGroupBounds(t, src)
	C, D, R := Copy, Drop, Reencode
	cases := []struct {
		name      string
		del       *roaring64.Bitmap
		want      []Action
		sizeKnown bool
	}{
		{"none", nil, []Action{C, C, C, C, C, C, C, C}, true},
		{"first row", roaring64.BitmapOf(0), []Action{R, C, C, C, C, C, C, C}, false},
		{"last row", roaring64.BitmapOf(uint64(n - 1)), []Action{C, C, C, C, C, C, C, R}, false},
		{"group 3 whole", rangeBitmap(firsts[3], firsts[4]), []Action{C, C, C, D, C, C, C, C}, true},
		{"groups 1-2 whole + 1 row", withRow(rangeBitmap(firsts[1], firsts[3]), 799),
			[]Action{C, D, D, C, C, C, C, R}, false},
		{"all", rangeBitmap(0, n), []Action{D, D, D, D, D, D, D, D}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, p := rewrite(t, src, c.del, nil)
			if got := p.Actions(); !slices.Equal(got, c.want) {
				t.Errorf("actions %v, want %v", got, c.want)
			}
			if _, ok := p.Size(); ok != c.sizeKnown {
				t.Errorf("size known %v, want %v", ok, c.sizeKnown)
			}
			if p.FooterOnly() != (c.del == nil) {
				t.Errorf("footer only %v", p.FooterOnly())
			}
			checkOutput(t, src, out, c.del, p, true)
		})
	}
}

func rangeBitmap(lo, hi int64) *roaring64.Bitmap {
	b := roaring64.New()
	b.AddRange(uint64(lo), uint64(hi))
	return b
}

func withRow(b *roaring64.Bitmap, row uint64) *roaring64.Bitmap {
	b.Add(row)
	return b
}

func TestFooterOnlyKeepsSourceBytes(t *testing.T) {
	src := genFile(t, genRows(500), 100, &parquet.Zstd)
	rn := &Rename{Name: func(p []string) (string, bool) {
		if len(p) == 1 {
			return "renamed_" + p[0], true
		}
		return "", false
	}}
	var out bytes.Buffer
	n, err := RewriteFooterOnly(bytes.NewReader(src), int64(len(src)), rn, &out)
	if err != nil {
		t.Fatal(err)
	}
	start := footerOf(t, src).start
	if n != int64(out.Len()) || !bytes.Equal(out.Bytes()[:start], src[:start]) {
		t.Fatalf("bytes before the footer changed")
	}
	f, rows := readRows(t, out.Bytes())
	if len(rows) != 500 || f.Schema().Fields()[0].Name() != "renamed_id" {
		t.Fatalf("got %d rows, first field %q", len(rows), f.Schema().Fields()[0].Name())
	}
}

func TestRewriteErrors(t *testing.T) {
	src := genFile(t, genRows(100), 50, &parquet.Snappy)
	encrypted := append([]byte("PARE"), src[4:len(src)-4]...)
	encrypted = append(encrypted, "PARE"...)
	truncated := src[:len(src)/2]
	badLen := slices.Clone(src)
	badLen[len(badLen)-8] = 0xff
	dup := &Rename{Name: func(p []string) (string, bool) { return "same", len(p) == 1 }}
	cases := []struct {
		name string
		data []byte
		del  *roaring64.Bitmap
		rn   *Rename
		want error
	}{
		{"encrypted", encrypted, nil, nil, ErrEncrypted},
		{"truncated", truncated, nil, nil, ErrCorrupt},
		{"bad footer length", badLen, nil, nil, ErrCorrupt},
		{"tiny", []byte("PAR1PAR1"), nil, nil, ErrCorrupt},
		{"row beyond file", src, roaring64.BitmapOf(100), nil, ErrInvalidArgument},
		{"duplicate names", src, nil, dup, ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Rewrite(bytes.NewReader(c.data), int64(len(c.data)), c.del, c.rn, &out)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}
