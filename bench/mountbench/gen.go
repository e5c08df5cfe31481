//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
)

// commitTime is the timestamp of the first generated commit (ms).
const commitTime = 1_767_225_600_000 // 2026-01-01T00:00:00Z

// writeCommit writes version v of the table at root: one JSON line per
// action, each a {"kind": value} object.
func writeCommit(root string, v int64, actions ...map[string]any) error {
	var buf bytes.Buffer
	ci := map[string]any{"commitInfo": map[string]any{"timestamp": commitTime + v*1000, "operation": "WRITE"}}
	for _, a := range append([]map[string]any{ci}, actions...) {
		line, err := json.Marshal(a)
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	dir := filepath.Join(root, "_delta_log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.json", v)), buf.Bytes(), 0o644)
}

// tableHeader returns the protocol and metaData actions of a version 0.
func tableHeader(schema string, dv bool) []map[string]any {
	proto := map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}
	conf := map[string]string{}
	if dv {
		proto = map[string]any{"minReaderVersion": 3, "minWriterVersion": 7,
			"readerFeatures": []string{"deletionVectors"}, "writerFeatures": []string{"deletionVectors"}}
		conf["delta.enableDeletionVectors"] = "true"
	}
	md := map[string]any{"id": uuid.NewString(), "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": schema, "partitionColumns": []string{}, "configuration": conf, "createdTime": commitTime}
	return []map[string]any{{"protocol": proto}, {"metaData": md}}
}

func addAction(path string, size int64, dv *delta.DeletionVector) map[string]any {
	return map[string]any{"add": &delta.Add{Path: path, PartitionValues: map[string]*string{}, Size: size,
		ModificationTime: commitTime, DataChange: true, DeletionVector: dv}}
}

func removeAction(path string, size int64, dv *delta.DeletionVector) map[string]any {
	r := map[string]any{"path": path, "deletionTimestamp": commitTime, "dataChange": true, "size": size}
	if dv != nil {
		r["deletionVector"] = dv
	}
	return map[string]any{"remove": r}
}

const idSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`

// seqRow is a row of the sequential table: 64 KiB of random bytes.
type seqRow struct {
	Payload []byte `parquet:"payload"`
}

const seqSchema = `{"type":"struct","fields":[{"name":"payload","type":"binary","nullable":false,"metadata":{}}]}`

// seqFileName is the sequential table's one data file.
const seqFileName = "part-00000-6a1b9f3e-0c1d-4f6e-9a7b-2c3d4e5f6a7b-c000.parquet"

// writeRandomTable writes a table at root whose one data file is a
// Parquet file of about size bytes of random (incompressible, uncompressed)
// values, in the table's schema, so that the mount serves it byte for
// byte. It returns the file's name and size.
func writeRandomTable(root string, size int64) (string, int64, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", 0, err
	}
	f, err := os.Create(filepath.Join(root, seqFileName))
	if err != nil {
		return "", 0, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := parquet.NewGenericWriter[seqRow](bw, parquet.PageBufferSize(1<<20))
	rng := rand.NewChaCha8([32]byte{1})
	row := []seqRow{{Payload: make([]byte, 64<<10)}}
	for written := int64(0); written < size; written += int64(len(row[0].Payload)) {
		rng.Read(row[0].Payload)
		if _, err := w.Write(row); err != nil {
			f.Close()
			return "", 0, err
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return "", 0, err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return "", 0, err
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return "", 0, err
	}
	return seqFileName, st.Size(), writeCommit(root, 0, append(tableHeader(seqSchema, false), addAction(seqFileName, st.Size(), nil))...)
}

// seqTable returns the sequential table of about o.seqBytes, written
// unless an earlier run into the same DELTAFS_BENCH_DIR did, with its
// file's name and size.
func seqTable(o options) (root, name string, size int64, err error) {
	root, done := generated(o, fmt.Sprintf("seq-%dM-v2", o.seqBytes>>20))
	if !done {
		return writeRandomTableAt(root, o.seqBytes)
	}
	st, err := os.Stat(filepath.Join(root, seqFileName))
	if err != nil {
		return "", "", 0, err
	}
	return root, seqFileName, st.Size(), nil
}

func writeRandomTableAt(root string, size int64) (string, string, int64, error) {
	name, n, err := writeRandomTable(root, size)
	return root, name, n, err
}

// writeManyTable writes a table at root with n small data files in its
// root directory, all added by version 0. It returns the first file name.
func writeManyTable(root string, n int) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	actions := tableHeader(idSchema, false)
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[idRow](&buf)
	if _, err := w.Write([]idRow{{ID: ptrInt64(1)}}); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	content := buf.Bytes()
	for i := range n {
		name := fmt.Sprintf("part-%05d-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-c000.snappy.parquet", i)
		if err := os.WriteFile(filepath.Join(root, name), content, 0o644); err != nil {
			return "", err
		}
		actions = append(actions, addAction(name, int64(len(content)), nil))
	}
	return fmt.Sprintf("part-%05d-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-c000.snappy.parquet", 0),
		writeCommit(root, 0, actions...)
}

// idRow is a row of a table of idSchema.
type idRow struct {
	ID *int64 `parquet:"id,optional"`
}

func ptrInt64(v int64) *int64 { return &v }

// dvRow is a row of the generated DV table: ~240 bytes, mostly random
// (incompressible) so the file's size is about rows x dvRowBytes.
type dvRow struct {
	ID      int64   `parquet:"id"`
	TS      int64   `parquet:"ts"`
	Value   float64 `parquet:"value"`
	Name    string  `parquet:"name"`
	Payload []byte  `parquet:"payload"`
}

const dvRowBytes = 225 // measured: the name column compresses a little

const dvSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"ts","type":"long","nullable":false,"metadata":{}},{"name":"value","type":"double","nullable":false,"metadata":{}},` +
	`{"name":"name","type":"string","nullable":false,"metadata":{}},{"name":"payload","type":"binary","nullable":false,"metadata":{}}]}`

// dvTable describes the generated DV table: version 0 adds the file
// without deletion vector, version 1 deletes every 10th row of row group
// 3, version 2 every 10th row of every row group.
type dvTable struct {
	root, name string
	size       int64 // stored size of the data file
	rows       int64 // rows in the stored file
	deleted    [3]int64
	rowGroups  int
	rowsPerRG  int64
}

// writeDVTable writes the DV table at root with a Parquet file of about
// size bytes in 8 row groups (snappy).
func writeDVTable(root string, size int64) (*dvTable, error) {
	t := &dvTable{root: root, name: "part-00000-3f2e1d0c-9b8a-4766-8554-33221100ffee-c000.snappy.parquet", rowGroups: 8}
	t.rowsPerRG = max(size/int64(t.rowGroups)/dvRowBytes, 10)
	t.rows = t.rowsPerRG * int64(t.rowGroups)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	if err := t.writeParquet(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(root, t.name))
	if err != nil {
		return nil, err
	}
	t.size = fi.Size()
	return t, t.writeLog()
}

func (t *dvTable) writeParquet() error {
	f, err := os.Create(filepath.Join(t.root, t.name))
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := parquet.NewGenericWriter[dvRow](bw, parquet.Compression(&parquet.Snappy))
	rng := rand.New(rand.NewPCG(7, 7))
	batch := make([]dvRow, 0, 1024)
	for rg := range t.rowGroups {
		for i := range t.rowsPerRG {
			id := int64(rg)*t.rowsPerRG + i
			p := make([]byte, 200)
			for j := 0; j < len(p); j += 8 {
				v := rng.Uint64()
				for k := range 8 {
					p[j+k] = byte(v >> (8 * k))
				}
			}
			batch = append(batch, dvRow{ID: id, TS: commitTime + id, Value: rng.Float64(), Name: fmt.Sprintf("name-%012d", rng.IntN(1e9)), Payload: p})
			if len(batch) == cap(batch) || i == t.rowsPerRG-1 {
				if _, err := w.Write(batch); err != nil {
					f.Close()
					return err
				}
				batch = batch[:0]
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// bitmaps returns the deleted rows of version 1 (every 10th row of row
// group 3) and version 2 (every 10th row of the file).
func (t *dvTable) bitmaps() (one, all *roaring64.Bitmap) {
	one, all = roaring64.New(), roaring64.New()
	for r := int64(0); r < t.rows; r += 10 {
		all.Add(uint64(r))
		if r/t.rowsPerRG == 3 {
			one.Add(uint64(r))
		}
	}
	return one, all
}

// writeLog writes the DV file and the three commits.
func (t *dvTable) writeLog() error {
	one, all := t.bitmaps()
	file, recs, err := delta.EncodeDVFile([]*roaring64.Bitmap{one, all})
	if err != nil {
		return err
	}
	id := uuid.New()
	if err := os.WriteFile(filepath.Join(t.root, "deletion_vector_"+id.String()+".bin"), file, 0o644); err != nil {
		return err
	}
	dvs := make([]*delta.DeletionVector, 2)
	for i, r := range recs {
		off := r.Offset
		dvs[i] = &delta.DeletionVector{StorageType: "u", PathOrInlineDV: delta.Z85Encode(id[:]),
			Offset: &off, SizeInBytes: r.SizeInBytes, Cardinality: r.Cardinality}
	}
	t.deleted = [3]int64{0, int64(one.GetCardinality()), int64(all.GetCardinality())}
	if err := writeCommit(t.root, 0, append(tableHeader(dvSchema, true), addAction(t.name, t.size, nil))...); err != nil {
		return err
	}
	if err := writeCommit(t.root, 1, removeAction(t.name, t.size, nil), addAction(t.name, t.size, dvs[0])); err != nil {
		return err
	}
	return writeCommit(t.root, 2, removeAction(t.name, t.size, dvs[0]), addAction(t.name, t.size, dvs[1]))
}
