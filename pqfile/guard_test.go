package pqfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// A few bytes claiming a 3 GiB footer, or Thrift lengths the footer cannot
// hold: parsers must refuse them without allocating the claimed length
// (found by FuzzReadParquetActions, whose workers ran out of memory).
func TestHugeFooterLengthAllocatesNothing(t *testing.T) {
	file := []byte("PAR1\x15\x00\x15^\x15b")
	file = binary.LittleEndian.AppendUint32(file, 0xB6D083BE)
	file = append(file, "PAR1"...)
	if err := CheckFooter(bytes.NewReader(file), int64(len(file))); err == nil {
		t.Fatal("CheckFooter accepted a footer longer than the file")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := FooterNumRows(bytes.NewReader(file), int64(len(file)))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("FooterNumRows: %v, want ErrCorrupt", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing a 20-byte file allocated %d bytes", got)
	}
	for name, footer := range map[string][]byte{
		"a list of 2^31-1 structs": {0x19, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00},
		"a string of 1 GiB":        {0x18, 0x80, 0x80, 0x80, 0x80, 0x04, 0x00},
		"nesting 100 deep":         append(bytes.Repeat([]byte{0x1C}, 100), bytes.Repeat([]byte{0}, 101)...),
	} {
		if err := CheckFooter(bytes.NewReader(parquetWithFooter(footer)), int64(len(footer)+12)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := []byte{0x15, 0x02, 0x19, 0x2C, 0x00, 0x00, 0x00} // i32 1, a list of 2 empty structs
	if err := CheckFooter(bytes.NewReader(parquetWithFooter(ok)), int64(len(ok)+12)); err != nil {
		t.Errorf("a well-formed footer refused: %v", err)
	}
}

func parquetWithFooter(footer []byte) []byte {
	b := append([]byte("PAR1"), footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	return append(b, "PAR1"...)
}

// Page headers claiming more than their chunk holds, or a huge
// uncompressed size, are refused before parquet-go allocates them.
func TestCheckPages(t *testing.T) {
	page := func(uncompressed, compressed uint64, data int) []byte {
		b := []byte{0x15, 0x00, 0x15}
		b = binary.AppendUvarint(b, uncompressed<<1)
		b = append(b, 0x15)
		b = binary.AppendUvarint(b, compressed<<1)
		b = append(b, 0x00)
		return append(b, make([]byte, data)...)
	}
	cases := []struct {
		name  string
		chunk []byte
		ok    bool
	}{
		{"two pages", append(page(4, 4, 4), page(8, 2, 2)...), true},
		{"huge uncompressed", page(1<<30, 4, 4), false},
		{"compressed past the chunk", page(4, 1<<30, 4), false},
		{"truncated header", page(4, 4, 4)[:3], false},
	}
	for _, c := range cases {
		err := checkPages(bytes.NewReader(c.chunk), 0, int64(len(c.chunk)), false)
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestCheckPagesLZ4 trial-decodes LZ4_RAW pages: a good file passes, and a
// page whose block does not decode to its declared size is refused before
// parquet-go's decoder (which grows its buffer without bound) sees it.
func TestCheckPagesLZ4(t *testing.T) {
	type row struct {
		ID   int64  `parquet:"id"`
		Name string `parquet:"name"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.Compression(&parquet.Lz4Raw))
	rows := make([]row, 5000)
	for i := range rows {
		rows[i] = row{int64(i), fmt.Sprintf("name-%d-%d", i, i*7919%1000)}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	open := func(b []byte) error {
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		return CheckPages(bytes.NewReader(b), int64(len(b)), f)
	}
	if err := open(data); err != nil {
		t.Fatalf("good LZ4_RAW file: %v", err)
	}
	f, _ := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	m := f.Metadata().RowGroups[0].Columns[1].MetaData
	if m.Codec != format.Lz4Raw {
		t.Fatalf("codec %v, want LZ4_RAW", m.Codec)
	}
	bad := bytes.Clone(data)
	// The first bytes of the page body are the LZ4 block's first token
	// and literal length: 0xff bytes there claim a literal run longer than
	// the block.
	_, hdr, err := readPageSizes(data[m.DataPageOffset:])
	if err != nil {
		t.Fatal(err)
	}
	body := m.DataPageOffset + int64(hdr)
	for i := body; i < body+8; i++ {
		bad[i] = 0xff
	}
	if err := open(bad); err == nil {
		t.Fatal("a corrupt LZ4_RAW page passed")
	}
}
