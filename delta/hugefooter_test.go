package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/hostilepq"
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

// A checkpoint whose schema is a 100,000-deep chain of groups (parquet-go
// asked for 80 GB building its columns, killing the mount at start or
// refresh): refused as a corrupt log naming the limit, allocating little
// (issue 20).
func TestDeepSchemaCheckpointRefused(t *testing.T) {
	f := hostilepq.File{DeepChain: 100_000, Columns: []hostilepq.Column{{Name: "id", Type: format.Int64,
		Pages: []hostilepq.Page{hostilepq.Int64Page(false, hostilepq.Ptrs(10, nil))}}}}
	file := f.Bytes()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := ReadParquetActions(bytes.NewReader(file), int64(len(file)), func(*Action) error { return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "schema nested deeper than 64 levels") {
		t.Errorf("ReadParquetActions: %v, want ErrCorruptLog naming the depth limit", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("refusing a %d-byte file allocated %d bytes", len(file), got)
	}
}
