package checkpoint

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/parquet-go/parquet-go"
)

// Go mirrors of the checkpoint schema, for writing test checkpoints with
// parquet-go. Pointers and nil maps/slices are written as nulls.
type (
	ckDV struct {
		StorageType    string `parquet:"storageType"`
		PathOrInlineDv string `parquet:"pathOrInlineDv"`
		Offset         *int32 `parquet:"offset,optional"`
		SizeInBytes    int32  `parquet:"sizeInBytes"`
		Cardinality    int64  `parquet:"cardinality"`
	}
	ckAdd struct {
		Path                    string             `parquet:"path"`
		PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
		Size                    int64              `parquet:"size"`
		ModificationTime        int64              `parquet:"modificationTime"`
		DataChange              bool               `parquet:"dataChange"`
		Tags                    map[string]*string `parquet:"tags,optional"`
		DeletionVector          *ckDV              `parquet:"deletionVector,optional"`
		BaseRowID               *int64             `parquet:"baseRowId,optional"`
		DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
		ClusteringProvider      *string            `parquet:"clusteringProvider,optional"`
		Stats                   *string            `parquet:"stats,optional"`
	}
	ckRemove struct {
		Path                 string             `parquet:"path"`
		DeletionTimestamp    *int64             `parquet:"deletionTimestamp,optional"`
		DataChange           bool               `parquet:"dataChange"`
		ExtendedFileMetadata *bool              `parquet:"extendedFileMetadata,optional"`
		PartitionValues      map[string]*string `parquet:"partitionValues,optional"`
		Size                 *int64             `parquet:"size,optional"`
		DeletionVector       *ckDV              `parquet:"deletionVector,optional"`
	}
	ckFormat struct {
		Provider string             `parquet:"provider"`
		Options  map[string]*string `parquet:"options,optional"`
	}
	ckMetadata struct {
		ID               string             `parquet:"id"`
		Name             *string            `parquet:"name,optional"`
		Description      *string            `parquet:"description,optional"`
		Format           ckFormat           `parquet:"format"`
		SchemaString     string             `parquet:"schemaString"`
		PartitionColumns []string           `parquet:"partitionColumns,list"`
		Configuration    map[string]*string `parquet:"configuration,optional"`
		CreatedTime      *int64             `parquet:"createdTime,optional"`
	}
	ckProtocol struct {
		MinReaderVersion int32    `parquet:"minReaderVersion"`
		MinWriterVersion int32    `parquet:"minWriterVersion"`
		ReaderFeatures   []string `parquet:"readerFeatures,optional,list"`
		WriterFeatures   []string `parquet:"writerFeatures,optional,list"`
	}
	ckTxn struct {
		AppID       string `parquet:"appId"`
		Version     int64  `parquet:"version"`
		LastUpdated *int64 `parquet:"lastUpdated,optional"`
	}
	// ckSparkRow is the layout of a Spark V1 checkpoint.
	ckSparkRow struct {
		Txn      *ckTxn      `parquet:"txn,optional"`
		Add      *ckAdd      `parquet:"add,optional"`
		Remove   *ckRemove   `parquet:"remove,optional"`
		MetaData *ckMetadata `parquet:"metaData,optional"`
		Protocol *ckProtocol `parquet:"protocol,optional"`
	}
)

const benchCheckpointAdds = 100_000

// writeTestCheckpoint writes a Spark-like V1 checkpoint (snappy, one row
// group) holding a protocol, a metaData, one txn, nAdds/100 removes and
// nAdds adds of a table partitioned by date, with ~150-byte JSON stats and
// no deletion vectors. The content is deterministic.
func writeTestCheckpoint(w io.Writer, nAdds int) error {
	pw := parquet.NewGenericWriter[ckSparkRow](w, parquet.Compression(&parquet.Snappy))
	rows := []ckSparkRow{
		{Protocol: &ckProtocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: benchMetadata()},
		{Txn: &ckTxn{AppID: "streaming-query-1", Version: 42}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	dates := make([]string, 60)
	for i := range dates {
		dates[i] = time.Date(2024, 1, 1+i, 0, 0, 0, 0, time.UTC).Format("2006-01-02")
	}
	for i := range nAdds {
		if len(rows) >= 1024 {
			if _, err := pw.Write(rows); err != nil {
				return err
			}
			rows = rows[:0]
		}
		date := &dates[rng.IntN(len(dates))]
		if i%100 == 99 {
			ts := int64(1_700_000_000_000 + i)
			rows = append(rows, ckSparkRow{Remove: &ckRemove{
				Path:              fmt.Sprintf("date=%s/part-%05d-removed.c000.snappy.parquet", *date, i),
				DeletionTimestamp: &ts, DataChange: true,
			}})
		}
		rows = append(rows, ckSparkRow{Add: benchAdd(rng, i, date)})
	}
	if _, err := pw.Write(rows); err != nil {
		return err
	}
	return pw.Close()
}

func benchMetadata() *ckMetadata {
	created := int64(1_700_000_000_000)
	return &ckMetadata{
		ID:               "5756e7b1-4b09-4c4e-a3b8-da3c214613d0",
		Format:           ckFormat{Provider: "parquet", Options: map[string]*string{}},
		SchemaString:     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"date","type":"string","nullable":true,"metadata":{}}]}`,
		PartitionColumns: []string{"date"},
		Configuration:    map[string]*string{},
		CreatedTime:      &created,
	}
}

func benchAdd(rng *rand.Rand, i int, date *string) *ckAdd {
	n := 1 + rng.IntN(1_000_000)
	stats := fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"a%07d"},"maxValues":{"id":%d,"name":"z%07d"},"nullCount":{"id":0,"name":%d}}`,
		n, i*1000, rng.IntN(1e7), i*1000+n, rng.IntN(1e7), rng.IntN(100))
	return &ckAdd{
		Path:             fmt.Sprintf("date=%s/part-%05d-%08x-%04x-4c4e-a3b8-da3c214613d0.c000.snappy.parquet", *date, i%200, rng.Uint32(), i&0xffff),
		PartitionValues:  map[string]*string{"date": date},
		Size:             int64(1<<20 + rng.IntN(1<<26)),
		ModificationTime: int64(1_700_000_000_000 + i),
		DataChange:       false,
		Stats:            &stats,
	}
}

var benchCheckpoint struct {
	once sync.Once
	data []byte
	err  error
}

func benchCheckpointData(b *testing.B) []byte {
	benchCheckpoint.once.Do(func() {
		var buf bytes.Buffer
		benchCheckpoint.err = writeTestCheckpoint(&buf, benchCheckpointAdds)
		benchCheckpoint.data = buf.Bytes()
	})
	if benchCheckpoint.err != nil {
		b.Fatal(benchCheckpoint.err)
	}
	return benchCheckpoint.data
}

// BenchmarkCheckpointDecodeFloor decodes every row of the benchmark
// checkpoint with parquet-go's generic row reader into reused buffers: the
// cost of merely decoding the file, which ReadActions is measured
// against.
func BenchmarkCheckpointDecodeFloor(b *testing.B) {
	data := benchCheckpointData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	peak := testenv.StartHeapPeak()
	rows := 0
	for b.Loop() {
		var err error
		if rows, err = testenv.DecodeParquetRows(data); err != nil {
			b.Fatal(err)
		}
	}
	peak.Report(b)
	if want := benchCheckpointAdds + benchCheckpointAdds/100 + 3; rows != want {
		b.Fatalf("decoded %d rows, want %d", rows, want)
	}
}

// BenchmarkReadParquetActions reads the benchmark checkpoint with
// ReadActions: "decode" only counts the actions; "snapshot" also
// keeps every add in a map by file key, as log replay does, so its peak
// heap includes the 100k retained adds.
func BenchmarkReadParquetActions(b *testing.B) {
	data := benchCheckpointData(b)
	b.Run("decode", func(b *testing.B) {
		n := 0
		benchReadActions(b, data, func(a *action.Action) error {
			if a.Add != nil {
				n++
			}
			return nil
		}, func() int { k := n; n = 0; return k })
	})
	b.Run("snapshot", func(b *testing.B) {
		files := make(map[string]*action.Add)
		benchReadActions(b, data, func(a *action.Action) error {
			if a.Add != nil {
				files[a.Add.Key()] = a.Add
			}
			return nil
		}, func() int { k := len(files); files = make(map[string]*action.Add); return k })
	})
}

// benchReadActions runs ReadActions with fn; done returns the adds
// seen by the last run and resets the caller's state.
func benchReadActions(b *testing.B, data []byte, fn func(*action.Action) error, done func() int) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	peak := testenv.StartHeapPeak()
	for b.Loop() {
		if err := ReadActions(bytes.NewReader(data), int64(len(data)), fn); err != nil {
			b.Fatal(err)
		}
		if n := done(); n != benchCheckpointAdds {
			b.Fatalf("%d adds, want %d", n, benchCheckpointAdds)
		}
	}
	peak.Report(b)
}
