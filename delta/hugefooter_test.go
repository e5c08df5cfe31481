package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/internal/testkit/hostilepq"
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
	err := checkpoint.ReadActions(bytes.NewReader(file), int64(len(file)), func(*Action) error { return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptLog) {
		t.Errorf("checkpoint.ReadActions: %v, want ErrCorruptLog", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing a 20-byte file allocated %d bytes", got)
	}
}

// A checkpoint whose schema is a 100,000-deep chain of groups (parquet-go
// asked for 80 GB building its columns, killing the mount at start or
// refresh): refused as a corrupt log naming the limit, allocating little.
func TestDeepSchemaCheckpointRefused(t *testing.T) {
	f := hostilepq.File{DeepChain: 100_000, Columns: []hostilepq.Column{{Name: "id", Type: format.Int64,
		Pages: []hostilepq.Page{hostilepq.Int64Page(false, hostilepq.Ptrs(10, nil))}}}}
	file := f.Bytes()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := checkpoint.ReadActions(bytes.NewReader(file), int64(len(file)), func(*Action) error { return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "schema nested deeper than 64 levels") {
		t.Errorf("checkpoint.ReadActions: %v, want ErrCorruptLog naming the depth limit", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("refusing a %d-byte file allocated %d bytes", len(file), got)
	}
}

// A commit line over action.MaxLineBytes and a log file over MaxLogFileBytes
// are refused as a corrupt log naming the limit, before the JSON decoder
// sees them (a 300 MB line was read whole).
func TestLogSizeLimits(t *testing.T) {
	defer func(l int, f int64) { action.MaxLineBytes, MaxLogFileBytes = l, f }(action.MaxLineBytes, MaxLogFileBytes)
	action.MaxLineBytes = 1 << 10
	line := []byte(`{"commitInfo":{"x":"` + strings.Repeat("a", 2<<10) + `"}}` + "\n")
	if err := action.Parse(line, func(*Action) error { return nil }); !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "over the limit of 1024 bytes a log line") {
		t.Errorf("a long line: %v", err)
	}
	MaxLogFileBytes = 100
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), line, 0o644); err != nil {
		t.Fatal(err)
	}
	st := dirStore{dir}
	_, err := readSized(context.Background(), st, "_delta_log/00000000000000000000.json", 0)
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "over the limit of 100 bytes a log file") {
		t.Errorf("a large file, size unknown: %v", err)
	}
	_, err = readSized(context.Background(), st, "_delta_log/00000000000000000000.json", int64(len(line)))
	if !errors.Is(err, ErrCorruptLog) {
		t.Errorf("a large file, size listed: %v", err)
	}
}
