package delta

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// checkpointFormat encodes snap's checkpoint with the table configuration
// changed to conf and returns its first column chunk's codec and whether
// any data page is a DataPageV2, or the encoding error.
func checkpointFormat(t *testing.T, snap *Snapshot, conf map[string]string) (format.CompressionCodec, bool, error) {
	t.Helper()
	cp := withConfig(snap, conf)
	var buf bytes.Buffer
	if _, err := checkpoint.Encode(&buf, cp.checkpointState()); err != nil {
		return 0, false, err
	}
	pf, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatalf("checkpoint does not open: %v", err)
	}
	codec := pf.Metadata().RowGroups[0].Columns[0].MetaData.Codec
	v2 := false
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			v2 = v2 || c.MetaData.Encoding != nil && hasV2Page(t, buf.Bytes(), c.MetaData)
		}
	}
	return codec, v2, nil
}

// withConfig is snap with its metadata's configuration replaced.
func withConfig(snap *Snapshot, conf map[string]string) *Snapshot {
	md := *snap.Metadata()
	md.Configuration = conf
	st := *snap.state
	st.metadata = &md
	return &Snapshot{table: snap.table, version: snap.version, state: &st, files: snap.files,
		timestamp: snap.timestamp, commitInfo: snap.commitInfo, segment: snap.segment, base: snap.base}
}

// hasV2Page reads the first page header of a column chunk.
func hasV2Page(t *testing.T, file []byte, cm format.ColumnMetaData) bool {
	t.Helper()
	off := cm.DataPageOffset
	if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < off {
		return false // a dictionary page first: look no further
	}
	var h format.PageHeader
	if err := thriftDecodePageHeader(file[off:], &h); err != nil {
		t.Fatalf("page header: %v", err)
	}
	return h.Type == format.DataPageV2
}

// TestCheckpointCodecFromTableProperties: PROTOCOL.md "Table Properties":
// delta.parquet.compression.codec chooses the checkpoint's codec (zstd
// when absent), delta.parquet.format.version its data page version
// (1.0.0, DataPageV1, when absent), and values a writer cannot honour are
// refused rather than ignored.
func TestCheckpointCodecFromTableProperties(t *testing.T) {
	snap, err := Open(dirStore{root: testenv.CopyFixture(t, "dat/basic_partitioned")}, Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		conf  map[string]string
		codec format.CompressionCodec
		v2    bool
	}{
		{nil, format.Zstd, false},
		{map[string]string{"delta.parquet.compression.codec": "SNAPPY"}, format.Snappy, false},
		{map[string]string{"delta.parquet.compression.codec": "gzip"}, format.Gzip, false},
		{map[string]string{"delta.parquet.compression.codec": "none"}, format.Uncompressed, false},
		{map[string]string{"delta.parquet.compression.codec": "lz4_raw"}, format.Lz4Raw, false},
		{map[string]string{"delta.parquet.format.version": "1.0.0"}, format.Zstd, false},
		{map[string]string{"delta.parquet.format.version": "2.12.0"}, format.Zstd, true},
	} {
		codec, v2, err := checkpointFormat(t, snap, tc.conf)
		if err != nil || codec != tc.codec || v2 != tc.v2 {
			t.Errorf("configuration %v: codec %v, DataPageV2 %v, %v; want %v, %v", tc.conf, codec, v2, err, tc.codec, tc.v2)
		}
	}
	for _, conf := range []map[string]string{
		{"delta.parquet.compression.codec": "lz4"}, {"delta.parquet.compression.codec": "bogus"},
		{"delta.parquet.format.version": "3.0.0"}, {"delta.parquet.format.version": "2.x"}, {"delta.parquet.format.version": "1.0"},
	} {
		_, _, err := checkpointFormat(t, snap, conf)
		if err == nil || !strings.Contains(err.Error(), "delta.parquet.") {
			t.Errorf("configuration %v: %v, want an error naming the property", conf, err)
		}
	}
	// WriteCheckpoint refuses too, naming the version and the table.
	cp := withConfig(snap, map[string]string{"delta.parquet.compression.codec": "bogus"})
	store := dirStore{root: t.TempDir()}
	if err := WriteCheckpoint(context.Background(), store, cp); err == nil || !strings.Contains(err.Error(), "write checkpoint 1") {
		t.Errorf("WriteCheckpoint with an unknown codec: %v", err)
	}
}

func thriftDecodePageHeader(b []byte, h *format.PageHeader) error {
	var proto thrift.CompactProtocol
	return thrift.NewDecoder(proto.NewReaderFromBytes(b)).Decode(h)
}
