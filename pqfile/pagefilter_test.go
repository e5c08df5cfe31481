package pqfile

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

type flatInner struct {
	X *int32 `parquet:"x,optional"`
	Y string `parquet:"y,dict"`
}

// flatRow has a column of every physical type, required and optional, PLAIN and dictionary,
// an always-null column and non-repeated groups (required and optional): all flat.
type flatRow struct {
	B     bool             `parquet:"b"`
	OB    *bool            `parquet:"ob,optional"`
	I32   int32            `parquet:"i32,plain"`
	OI32  *int32           `parquet:"oi32,optional"`
	DI32  int32            `parquet:"di32,dict"`
	I64   int64            `parquet:"i64"`
	OI64  *int64           `parquet:"oi64,optional,dict"`
	I96   deprecated.Int96 `parquet:"i96"`
	F32   float32          `parquet:"f32"`
	F64   *float64         `parquet:"f64,optional"`
	FLBA  [6]byte          `parquet:"flba"`
	S     string           `parquet:"s,plain"`
	DS    *string          `parquet:"ds,optional,dict"`
	Bin   []byte           `parquet:"bin,optional,plain"`
	DL    string           `parquet:"dl"`           // parquet-go's default: DELTA_LENGTH_BYTE_ARRAY
	ODL   []byte           `parquet:"odl,optional"` // the same, with nulls
	Nulls *int64           `parquet:"nulls,optional"`
	In    flatInner        `parquet:"in"`
	Opt   *flatInner       `parquet:"opt,optional"`
}

// flatRows makes n rows with runs of nulls (so some pages are all null) and repeated values.
func flatRows(n int, seed uint64) []flatRow {
	rng := rand.New(rand.NewPCG(seed, 11))
	rows := make([]flatRow, n)
	for i := range rows {
		r := &rows[i]
		r.B = rng.IntN(3) == 0
		r.I32, r.DI32, r.I64 = int32(i), int32(i%7), int64(i)*1e9
		r.I96 = deprecated.Int96{uint32(i), uint32(i >> 2), 2440588}
		r.F32 = float32(i) / 4
		copy(r.FLBA[:], fmt.Sprintf("%06d", i))
		r.S = strings.Repeat(string(rune('a'+i%26)), i%23)
		r.DL = fmt.Sprint(i * i)
		r.In = flatInner{Y: fmt.Sprint("y", i%5)}
		if (i/150)%3 != 1 { // rows 150-299, 600-749... are null in the optional columns
			b, v32, v64, f, s := i%2 == 0, int32(-i), int64(i%11), float64(i)/3, fmt.Sprint("d", i%9)
			r.OB, r.OI32, r.OI64, r.F64, r.DS = &b, &v32, &v64, &f, &s
			r.Bin, r.ODL = []byte(r.S), []byte(r.S+"x")
			r.In.X = &v32
			r.Opt = &flatInner{Y: s}
			if i%4 != 0 {
				r.Opt.X = &v32
			}
		}
	}
	return rows
}

// flatFile writes rows in row groups of perGroup rows with small pages.
func flatFile[T any](t testing.TB, rows []T, perGroup int64, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	opts = append([]parquet.WriterOption{parquet.MaxRowsPerRowGroup(perGroup), parquet.PageBufferSize(1024),
		parquet.KeyValueMetadata("origin", "pagefilter-test")}, opts...)
	w := parquet.NewGenericWriter[T](&buf, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// observe records how each re-encoded row group was served until the test ends.
func observe(t *testing.T) func() map[int]error {
	t.Helper()
	var mu sync.Mutex
	got := map[int]error{}
	fn := func(group int, why error) {
		mu.Lock()
		defer mu.Unlock()
		got[group] = why
	}
	reencodeObserver.Store(&fn)
	t.Cleanup(func() { reencodeObserver.Store(nil) })
	return func() map[int]error {
		mu.Lock()
		defer mu.Unlock()
		out := map[int]error{}
		for k, v := range got {
			out[k] = v
		}
		return out
	}
}

// pageStarts returns the first row (within its row group) of every page of column col in row
// group rg of data.
func pageStarts(t *testing.T, data []byte, rg, col int) []int64 {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	pages := f.RowGroups()[rg].ColumnChunks()[col].Pages()
	defer pages.Close()
	var starts []int64
	var row int64
	for {
		p, err := pages.ReadPage()
		if err != nil {
			break
		}
		starts = append(starts, row)
		row += p.NumRows()
		parquet.Release(p)
	}
	return starts
}

// pageCases returns deletion sets over a file of 3 row groups of per rows, aimed at the pages of
// column col of row group 1: a row group untouched, one row, a page's first and last rows, a
// whole page, every 7th row, half the rows at random, all rows of a group but one.
func pageCases(t *testing.T, data []byte, per int64, col int) []deletionCase {
	starts := pageStarts(t, data, 1, col)
	if len(starts) < 4 {
		t.Fatalf("column %d of row group 1 has %d pages, want several", col, len(starts))
	}
	g := uint64(per) // first row of row group 1
	k := uint64(starts[2])
	bm := roaring64.BitmapOf
	every, half, allBut := roaring64.New(), roaring64.New(), roaring64.New()
	rng := rand.New(rand.NewPCG(3, 3))
	for r := range uint64(3 * per) {
		if r%7 == 3 {
			every.Add(r)
		}
		if rng.IntN(2) == 0 {
			half.Add(r)
		}
	}
	allBut.AddRange(g, g+uint64(per))
	allBut.Remove(g + 17)
	return []deletionCase{
		{"one-row", bm(g + 5)},
		{"page-first-row", bm(g + k)},
		{"page-last-row", bm(g + k - 1)},
		{"whole-page", rangeBitmap(int64(g+uint64(starts[1])), int64(g+k))},
		{"every-7th", every},
		{"random-half", half},
		{"all-but-one", allBut},
	}
}

func TestPageFilterGenerated(t *testing.T) {
	const per = 1000
	rows := flatRows(3*per, 1)
	codecs := []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Zstd}
	for _, codec := range codecs {
		for _, version := range []int{1, 2} {
			opts := []parquet.WriterOption{parquet.Compression(codec), parquet.DataPageVersion(version)}
			if version == 1 {
				opts = append(opts, parquet.DataPageStatistics(true), parquet.DictionaryMaxBytes(200))
			}
			src := flatFile(t, rows, per, opts...)
			for _, dc := range pageCases(t, src, per, 11) {
				t.Run(fmt.Sprintf("%v/v%d/%s", codec, version, dc.name), func(t *testing.T) {
					seen := observe(t)
					out, p := rewrite(t, src, dc.del, nil)
					checkOutput(t, src, out, dc.del, p, true)
					checkFooterCounts(t, out)
					checkPageCRCs(t, out)
					checkFastPath(t, p, seen())
				})
			}
		}
	}
}

// checkFastPath asserts that every partly deleted row group went through the page filter.
func checkFastPath(t *testing.T, p *Plan, seen map[int]error) {
	t.Helper()
	n := 0
	for i, a := range p.Actions() {
		if a != Reencode {
			continue
		}
		n++
		if why, ok := seen[i]; !ok || why != nil {
			t.Errorf("row group %d: page filter not used (seen %v): %v", i, ok, why)
		}
	}
	if n == 0 {
		t.Errorf("no row group to re-encode: the case tests nothing")
	}
}

// checkFooterCounts asserts that every column chunk of data counts its row group's rows as values
// and its nulls exactly, as parquet-go reads them.
func checkFooterCounts(t *testing.T, data []byte) {
	t.Helper()
	meta := &footerOf(t, data).meta
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for i, rg := range f.RowGroups() {
		for j, cc := range rg.ColumnChunks() {
			md := &meta.RowGroups[i].Columns[j].MetaData
			values, nulls := countValues(t, cc)
			if md.NumValues != values || values != rg.NumRows() {
				t.Errorf("rg %d col %v: num_values %d, read %d values, %d rows", i, md.PathInSchema, md.NumValues, values, rg.NumRows())
			}
			if md.Statistics.NullCount != nulls {
				t.Errorf("rg %d col %v: null_count %d, read %d nulls", i, md.PathInSchema, md.Statistics.NullCount, nulls)
			}
		}
	}
}

func countValues(t *testing.T, cc parquet.ColumnChunk) (values, nulls int64) {
	t.Helper()
	r := parquet.NewColumnChunkValueReader(cc)
	defer r.Close()
	buf := make([]parquet.Value, 512)
	for {
		n, err := r.ReadValues(buf)
		for _, v := range buf[:n] {
			values++
			if v.IsNull() {
				nulls++
			}
		}
		if err != nil {
			return values, nulls
		}
	}
}

// checkPageCRCs walks every page of data and checks the CRC of each page that has one.
func checkPageCRCs(t *testing.T, data []byte) {
	t.Helper()
	meta := &footerOf(t, data).meta
	for i := range meta.RowGroups {
		for j := range meta.RowGroups[i].Columns {
			c := chunkBytes(t, data, meta, i, j)
			for off := 0; off < len(c); {
				var h format.PageHeader
				hl, err := decodePageHeader(c[off:], &h)
				if err != nil {
					t.Fatalf("rg %d col %d: page header at %d: %v", i, j, off, err)
				}
				body := c[off+int(hl) : off+int(hl)+int(h.CompressedPageSize)]
				if h.CRC != 0 && int32(crc32.ChecksumIEEE(body)) != h.CRC {
					t.Errorf("rg %d col %d: page at %d: bad CRC", i, j, off)
				}
				off += int(hl) + int(h.CompressedPageSize)
			}
		}
	}
}

// deltaRow and splitRow have columns the page filter does not decode.
type deltaRow struct {
	ID    int64  `parquet:"id,delta"`
	Flag  bool   `parquet:"flag"`
	Plain string `parquet:"plain,plain"`
}

type splitRow struct {
	ID int64   `parquet:"id"`
	V  float64 `parquet:"v,split"`
}

func TestPageFilterFallback(t *testing.T) {
	const per = 500
	deltas, splits := make([]deltaRow, 3*per), make([]splitRow, 3*per)
	for i := range deltas {
		deltas[i] = deltaRow{ID: int64(i) * 3, Flag: i%3 == 0, Plain: fmt.Sprint(i)}
		splits[i] = splitRow{ID: int64(i), V: float64(i) / 7}
	}
	cases := []struct {
		name string
		src  []byte
		want string // in the reason
	}{
		{"nested", flatFile(t, genRows(3*per), per), "repeated"},
		{"delta-binary-packed", flatFile(t, deltas, per), "DELTA_BINARY_PACKED"},
		{"byte-stream-split", flatFile(t, splits, per), "BYTE_STREAM_SPLIT"},
		{"rle-booleans", flatFile(t, flatRows(3*per, 2), per, parquet.DefaultEncodingFor(parquet.Boolean, &parquet.RLE)),
			"RLE BOOLEAN"},
	}
	del := roaring64.New()
	for r := uint64(per); r < 2*per; r += 3 {
		del.Add(r)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen := observe(t)
			out, p := rewrite(t, c.src, del, nil)
			checkOutput(t, c.src, out, del, p, true)
			why := seen()[1]
			if why == nil || !errors.Is(why, errNoFastPath) || !strings.Contains(why.Error(), c.want) {
				t.Errorf("row group 1: reason %v, want a fallback mentioning %q", why, c.want)
			}
		})
	}
}

// flipValueByte changes one byte inside the PLAIN int32 values of column i32's first page in row
// group 1 of an uncompressed file, leaving the page decodable but its CRC wrong.
func flipValueByte(t *testing.T, src []byte) []byte {
	t.Helper()
	meta := &footerOf(t, src).meta
	md := &meta.RowGroups[1].Columns[2].MetaData
	if md.PathInSchema[0] != "i32" {
		t.Fatalf("column 2 is %v", md.PathInSchema)
	}
	var h format.PageHeader
	hl, err := decodePageHeader(src[md.DataPageOffset:], &h)
	if err != nil || h.CRC == 0 {
		t.Fatalf("page header: %v (crc %d)", err, h.CRC)
	}
	out := bytes.Clone(src)
	out[md.DataPageOffset+hl+int64(h.CompressedPageSize)-2] ^= 0x40 // high byte of the last value
	return out
}

// flatFixtureTables are fixture tables (Spark, delta-rs) whose columns are all flat: the page
// filter must serve every partly deleted row group of their files.
var flatFixtureTables = []string{
	"delta/spark-table-with-dv-large",
	"delta-kernel-rs/golden-dv-partitioned-with-checkpoint",
	"delta-kernel-rs/golden-data-reader-nested-struct",
	"delta-kernel-rs/golden-decimal-various-scale-precision",
}

func TestPageFilterFixtures(t *testing.T) {
	forFixtureDeletions(t, flatFixtureTables, func(t *testing.T, src []byte, dc deletionCase) {
		seen := observe(t)
		out, p := rewrite(t, src, dc.del, nil)
		checkOutput(t, src, out, dc.del, p, true)
		checkFooterCounts(t, out)
		checkPageCRCs(t, out)
		if slices.Contains(p.Actions(), Reencode) {
			checkFastPath(t, p, seen())
		}
	})
}
