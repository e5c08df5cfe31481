package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// A few bytes claiming a 3 GiB footer: parsers must refuse them without
// allocating the claimed length (found by FuzzReadParquetActions, whose
// workers were killed for memory).
func TestHugeFooterLengthAllocatesNothing(t *testing.T) {
	file := []byte("PAR1\x15\x00\x15^\x15b")
	file = binary.LittleEndian.AppendUint32(file, 0xB6D083BE)
	file = append(file, "PAR1"...)
	if err := CheckParquetTail(bytes.NewReader(file), int64(len(file))); err == nil {
		t.Fatal("CheckParquetTail accepted a footer longer than the file")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := ReadParquetActions(bytes.NewReader(file), int64(len(file)), func(*Action) error { return nil })
	_, err2 := FooterNumRows(bytes.NewReader(file), int64(len(file)))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptLog) || err2 == nil {
		t.Errorf("errors %v, %v; want refusals", err, err2)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing a 20-byte file allocated %d bytes", got)
	}
	good := append([]byte("PAR1xxxx"), binary.LittleEndian.AppendUint32(nil, 4)...)
	if err := CheckParquetTail(bytes.NewReader(append(good, "PAR1"...)), int64(len(good)+4)); err != nil {
		t.Errorf("a fitting footer length refused: %v", err)
	}
}
