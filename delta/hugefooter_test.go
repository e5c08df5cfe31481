package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// A few bytes claiming a 3 GiB footer: the checkpoint reader refuses them
// as a corrupt log without allocating the claimed length (found by
// FuzzReadParquetActions, whose workers ran out of memory). The guards
// themselves are tested in pqfile.
func TestHugeFooterLengthAllocatesNothing(t *testing.T) {
	file := []byte("PAR1\x15\x00\x15^\x15b")
	file = binary.LittleEndian.AppendUint32(file, 0xB6D083BE)
	file = append(file, "PAR1"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := ReadParquetActions(bytes.NewReader(file), int64(len(file)), func(*Action) error { return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptLog) {
		t.Errorf("ReadParquetActions: %v, want ErrCorruptLog", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing a 20-byte file allocated %d bytes", got)
	}
}
