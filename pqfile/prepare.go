package pqfile

import (
	"bytes"
	"sync"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// prepared runs Prepare's work once per process.
var prepared sync.Once

// Prepare does, once per process, what the first footer a process reads would otherwise do on
// its caller's time: parquet-go's thrift package builds the codec of each footer type by
// reflection at its first use (a hundred times a later decode's cost), and the first read of
// a file's end faults its buffer in. It reads nothing and returns once done; a mount calls it in the background
// when it loads a table's version, so that the first stat finds it done.
func Prepare() {
	prepared.Do(func() { prepare() })
}

// prepare makes a one-column footer in memory and runs it through the encoder, the decoder
// and ShapeNeeded, returning ShapeNeeded's verdict (false: the file fits its own shape).
func prepare() (bool, error) {
	leaf := format.SchemaElement{
		Name:           "t",
		Type:           thrift.New(format.Int64),
		RepetitionType: thrift.New(format.Optional),
		LogicalType: format.LogicalType{Value: &format.TimestampType{
			IsAdjustedToUTC: true, Unit: format.TimeUnit{Value: &format.MicroSeconds{}},
		}},
	}
	meta := format.FileMetaData{
		Version: 1,
		Schema:  []format.SchemaElement{{Name: "schema", NumChildren: thrift.New(int32(1))}, leaf},
		NumRows: 1,
		RowGroups: []format.RowGroup{{
			Columns: []format.ColumnChunk{{MetaData: format.ColumnMetaData{
				Type: format.Int64, Encoding: []format.Encoding{format.Plain}, PathInSchema: []string{"t"},
				Codec: format.Snappy, NumValues: 1, TotalUncompressedSize: 8, TotalCompressedSize: 8, DataPageOffset: 4,
			}}},
			TotalByteSize: 8, NumRows: 1,
		}},
	}
	tail, err := encodeFooter(&meta) // the encoder's codecs
	if err != nil {
		return false, err
	}
	var back format.FileMetaData // the whole footer's decoder, which a rewrite uses
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), tail[:len(tail)-trailerLen], &back); err != nil {
		return false, err
	}
	file := append([]byte(magic), tail...)
	shape := &Shape{Columns: []ShapeColumn{{Name: leaf.Name, Schema: []format.SchemaElement{leaf}}}}
	return ShapeNeeded(bytes.NewReader(file), int64(len(file)), shape, nil) // the schema's decoder, a tail buffer
}
