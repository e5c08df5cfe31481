// Package scalegen writes Delta tables of production size fast, for the
// scale benchmark: N commits of M adds each, Spark's layout and naming,
// classic V1 checkpoints written directly from the generator's own list of
// live files (never by replaying the log), commit file times one second
// apart (and in-commit timestamps when asked). Data files are not written:
// the metadata paths (listing, lookup, stat, find) never open them.
package scalegen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"
)

// Spec describes a table to generate.
type Spec struct {
	Dir             string // table root (created)
	Commits         int    // number of commits (versions 0..Commits-1)
	FilesPerCommit  int    // adds per commit (version 0 included)
	CheckpointEvery int    // a checkpoint every K versions; 0: only at the last version
	KeepCheckpoints bool   // with CheckpointEvery: keep them all (else only the last)
	MaxLive         int    // 0: unlimited; else commits also remove the oldest files beyond it
	Partitions      int    // distinct values of the partition column "date"; 0: unpartitioned
	ICT             bool   // in-commit timestamps enabled from version 0
	// Spark writes the commits as Spark does (spark.go): full statistics
	// of sparkColumns columns per add, Spark's commitInfo, and a DELETE
	// removing DeleteFiles random live files every DeleteEvery versions.
	Spark       bool
	DeleteEvery int // with Spark: 0 for never
	DeleteFiles int // with Spark: files each DELETE removes
	Seed        uint64
}

// Start is the commit time of version 0; version v is committed v seconds later.
var Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// CommitTime returns the commit time of version v.
func CommitTime(v int64) time.Time { return Start.Add(time.Duration(v) * time.Second) }

type file struct {
	path string
	date string // "" when unpartitioned
	size int64
	rows int64
	mod  int64 // ms
}

// Result says what was generated.
type Result struct {
	Dir         string // the table root
	Latest      int64
	LiveFiles   int
	Checkpoints []int64
	Paths       []string // live file paths at the latest version (relative to Dir)
}

// Generate writes the table described by s.
func Generate(s Spec) (*Result, error) {
	logDir := filepath.Join(s.Dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(s.Seed, 7))
	var live []file // oldest first
	res := &Result{Dir: s.Dir, Latest: int64(s.Commits - 1)}
	for v := int64(0); v < int64(s.Commits); v++ {
		adds := make([]file, s.FilesPerCommit)
		for i := range adds {
			adds[i] = newFile(rng, s, v, i)
		}
		var removed []file
		if s.Spark && s.DeleteEvery > 0 && v > 0 && v%int64(s.DeleteEvery) == 0 {
			live, removed = removeRandom(rng, live, s.DeleteFiles)
		}
		live = append(live, adds...)
		if s.MaxLive > 0 && len(live) > s.MaxLive {
			n := len(live) - s.MaxLive
			removed = append(removed, live[:n]...)
			live = live[n:] // append copies the rest when it next grows
		}
		if err := writeCommit(logDir, s, v, adds, removed); err != nil {
			return nil, err
		}
		last := v == int64(s.Commits-1)
		every := s.CheckpointEvery > 0 && v > 0 && v%int64(s.CheckpointEvery) == 0
		if every && !s.KeepCheckpoints && v+int64(s.CheckpointEvery) < int64(s.Commits) {
			every = false // removed by the next one: the table is the same without writing it
		}
		if every || (last && s.CheckpointEvery == 0) {
			if err := writeCheckpoint(logDir, s, v, live); err != nil {
				return nil, err
			}
			if !s.KeepCheckpoints && len(res.Checkpoints) > 0 {
				prev := res.Checkpoints[len(res.Checkpoints)-1]
				os.Remove(filepath.Join(logDir, fmt.Sprintf("%020d.checkpoint.parquet", prev)))
				res.Checkpoints = res.Checkpoints[:len(res.Checkpoints)-1]
			}
			res.Checkpoints = append(res.Checkpoints, v)
		}
	}
	if n := len(res.Checkpoints); n > 0 {
		lc := fmt.Sprintf(`{"version":%d,"size":%d}`, res.Checkpoints[n-1], len(live)+2)
		if err := os.WriteFile(filepath.Join(logDir, "_last_checkpoint"), []byte(lc), 0o644); err != nil {
			return nil, err
		}
	}
	res.LiveFiles = len(live)
	for _, f := range live {
		res.Paths = append(res.Paths, f.path)
	}
	return res, nil
}

func newFile(rng *rand.Rand, s Spec, v int64, i int) file {
	f := file{size: 1<<20 + rng.Int64N(1<<26), rows: 1 + rng.Int64N(1_000_000), mod: CommitTime(v).UnixMilli()}
	name := fmt.Sprintf("part-%05d-%08x-%04x-4c4e-a3b8-%012x.c000.snappy.parquet", i, rng.Uint32(), v&0xffff, rng.Uint64()&0xffffffffffff)
	if s.Partitions > 0 {
		f.date = Start.AddDate(0, 0, int((v*int64(s.FilesPerCommit)+int64(i))%int64(s.Partitions))).Format("2006-01-02")
		f.path = "date=" + f.date + "/" + name
	} else {
		f.path = name
	}
	return f
}

func tableSchema(s Spec) string {
	if s.Spark {
		return sparkSchema()
	}
	return schema
}

const schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"date","type":"string","nullable":true,"metadata":{}}]}`

func (f file) stats(s Spec) string {
	if s.Spark {
		return f.sparkStats()
	}
	return fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"a%07d"},"maxValues":{"id":%d,"name":"z%07d"},"nullCount":{"id":0,"name":%d}}`,
		f.rows, f.mod%1000, f.rows%9999999, f.mod%1000+f.rows, f.size%9999999, f.rows%100)
}

func (f file) partitionValues() map[string]*string {
	if f.date == "" {
		return map[string]*string{}
	}
	d := f.date
	return map[string]*string{"date": &d}
}

func protocolAndMetadata(s Spec) (proto, md map[string]any) {
	proto = map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}
	conf := map[string]string{}
	if s.ICT {
		proto = map[string]any{"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": []string{"inCommitTimestamp"}}
		conf["delta.enableInCommitTimestamps"] = "true"
	}
	parts := []string{}
	if s.Partitions > 0 {
		parts = []string{"date"}
	}
	md = map[string]any{"id": "5756e7b1-4b09-4c4e-a3b8-da3c214613d0", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": tableSchema(s), "partitionColumns": parts, "configuration": conf, "createdTime": Start.UnixMilli()}
	return proto, md
}

func writeCommit(logDir string, s Spec, v int64, adds, removed []file) error {
	name := filepath.Join(logDir, fmt.Sprintf("%020d.json", v))
	fh, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(fh, 64<<10)
	enc := json.NewEncoder(w)
	ts := CommitTime(v).UnixMilli()
	ci := map[string]any{"timestamp": ts, "operation": "WRITE", "operationParameters": map[string]string{"mode": "Append"}, "engineInfo": "scalegen"}
	if s.Spark {
		ci = sparkCommitInfo(v, ts, adds, removed)
	}
	if s.ICT {
		ci["inCommitTimestamp"] = ts
	}
	enc.Encode(map[string]any{"commitInfo": ci})
	if v == 0 {
		proto, md := protocolAndMetadata(s)
		enc.Encode(map[string]any{"protocol": proto})
		enc.Encode(map[string]any{"metaData": md})
	}
	for _, f := range removed {
		enc.Encode(map[string]any{"remove": map[string]any{"path": f.path, "deletionTimestamp": ts, "dataChange": true,
			"extendedFileMetadata": true, "partitionValues": f.partitionValues(), "size": f.size}})
	}
	for _, f := range adds {
		enc.Encode(map[string]any{"add": map[string]any{"path": f.path, "partitionValues": f.partitionValues(), "size": f.size,
			"modificationTime": f.mod, "dataChange": true, "stats": f.stats(s)}})
	}
	if err := w.Flush(); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	t := CommitTime(v)
	return os.Chtimes(name, t, t)
}

// The columns of a Spark V1 checkpoint this generator fills.
type (
	cpAdd struct {
		Path             *string            `parquet:"path,optional"`
		PartitionValues  map[string]*string `parquet:"partitionValues,optional"`
		Size             *int64             `parquet:"size,optional"`
		ModificationTime *int64             `parquet:"modificationTime,optional"`
		DataChange       *bool              `parquet:"dataChange,optional"`
		Stats            *string            `parquet:"stats,optional"`
	}
	cpFormat struct {
		Provider *string            `parquet:"provider,optional"`
		Options  map[string]*string `parquet:"options,optional"`
	}
	cpMetadata struct {
		ID               *string            `parquet:"id,optional"`
		Format           *cpFormat          `parquet:"format,optional"`
		SchemaString     *string            `parquet:"schemaString,optional"`
		PartitionColumns []*string          `parquet:"partitionColumns,optional,list"`
		Configuration    map[string]*string `parquet:"configuration,optional"`
		CreatedTime      *int64             `parquet:"createdTime,optional"`
	}
	cpProtocol struct {
		MinReaderVersion *int32    `parquet:"minReaderVersion,optional"`
		MinWriterVersion *int32    `parquet:"minWriterVersion,optional"`
		WriterFeatures   []*string `parquet:"writerFeatures,optional,list"`
	}
	cpRow struct {
		Add      *cpAdd      `parquet:"add,optional"`
		MetaData *cpMetadata `parquet:"metaData,optional"`
		Protocol *cpProtocol `parquet:"protocol,optional"`
	}
)

func ptr[T any](v T) *T { return &v }

func writeCheckpoint(logDir string, s Spec, v int64, live []file) error {
	name := filepath.Join(logDir, fmt.Sprintf("%020d.checkpoint.parquet", v))
	tmp := name + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(fh, 1<<20)
	pw := parquet.NewGenericWriter[cpRow](bw, parquet.Compression(&parquet.Snappy))
	proto := &cpProtocol{MinReaderVersion: ptr[int32](1), MinWriterVersion: ptr[int32](2)}
	conf := map[string]*string{}
	if s.ICT {
		proto = &cpProtocol{MinReaderVersion: ptr[int32](1), MinWriterVersion: ptr[int32](7), WriterFeatures: []*string{ptr("inCommitTimestamp")}}
		conf["delta.enableInCommitTimestamps"] = ptr("true")
	}
	parts := []*string{}
	if s.Partitions > 0 {
		parts = []*string{ptr("date")}
	}
	rows := []cpRow{
		{Protocol: proto},
		{MetaData: &cpMetadata{ID: ptr("5756e7b1-4b09-4c4e-a3b8-da3c214613d0"), Format: &cpFormat{Provider: ptr("parquet"), Options: map[string]*string{}},
			SchemaString: ptr(tableSchema(s)), PartitionColumns: parts, Configuration: conf, CreatedTime: ptr(Start.UnixMilli())}},
	}
	for _, f := range live {
		if len(rows) >= 4096 {
			if _, err := pw.Write(rows); err != nil {
				fh.Close()
				return err
			}
			rows = rows[:0]
		}
		rows = append(rows, cpRow{Add: &cpAdd{Path: ptr(f.path), PartitionValues: f.partitionValues(), Size: ptr(f.size),
			ModificationTime: ptr(f.mod), DataChange: ptr(false), Stats: ptr(f.stats(s))}})
	}
	if _, err := pw.Write(rows); err != nil {
		fh.Close()
		return err
	}
	if err := pw.Close(); err != nil {
		fh.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	t := CommitTime(v).Add(500 * time.Millisecond)
	os.Chtimes(tmp, t, t)
	return os.Rename(tmp, name)
}
