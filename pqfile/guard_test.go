package pqfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
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
		err := checkPages(bytes.NewReader(c.chunk), 0, int64(len(c.chunk)))
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
