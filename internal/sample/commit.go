package sample

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/deltafs/deltafs/delta"
)

// engineInfo is the commitInfo.engineInfo of the sample's commits.
const engineInfo = "deltafs-sample"

// idSpace makes the sample's UUIDs (table id, file names) deterministic.
var idSpace = uuid.MustParse("5e1f0c4a-7d1b-4c55-9a43-0d3e1f6b2a10")

func sampleID(name string) uuid.UUID { return uuid.NewSHA1(idSpace, []byte(name)) }

// createActions returns version 0: the protocol with deletion vectors and
// the change data feed, and the metadata of the partitioned orders table.
func createActions() ([]*delta.Action, error) {
	created := CommitTime(0).UnixMilli()
	ci, err := commitInfo(0, "CREATE TABLE", map[string]any{
		"partitionBy": `["region"]`, "description": nil, "isManaged": "false",
		"properties": `{"delta.enableChangeDataFeed":"true","delta.enableDeletionVectors":"true"}`,
	}, nil, false)
	if err != nil {
		return nil, err
	}
	return []*delta.Action{
		ci,
		{Protocol: &delta.Protocol{
			MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"changeDataFeed", "deletionVectors"},
		}},
		{MetaData: &delta.Metadata{
			ID:           sampleID("table").String(),
			Format:       delta.Format{Provider: "parquet", Options: map[string]string{}},
			SchemaString: schemaString, PartitionColumns: []string{"region"},
			Configuration: map[string]string{"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"},
			CreatedTime:   &created,
		}},
	}, nil
}

// appendActions writes the files of an append and returns its commit.
func (g *generator) appendActions(ctx context.Context, v int64, files []fileSpec) ([]*delta.Action, error) {
	var adds []*delta.Action
	var rows, size int64
	for i, f := range files {
		add, err := g.writeFile(ctx, v, i, f)
		if err != nil {
			return nil, err
		}
		g.live = append(g.live, liveFile{spec: f, add: add})
		adds = append(adds, &delta.Action{Add: add})
		rows, size = rows+f.n, size+add.Size
	}
	ci, err := commitInfo(v, "WRITE", map[string]any{"mode": "Append", "partitionBy": "[]"},
		map[string]any{"numFiles": fmt.Sprint(len(files)), "numOutputRows": fmt.Sprint(rows), "numOutputBytes": fmt.Sprint(size)}, true)
	if err != nil {
		return nil, err
	}
	return append([]*delta.Action{ci}, adds...), nil
}

// writeFile writes file i of version v and returns its add action.
func (g *generator) writeFile(ctx context.Context, v int64, i int, f fileSpec) (*delta.Add, error) {
	data, err := encodeParquet(f)
	if err != nil {
		return nil, err
	}
	st, err := stats(f, false)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("part-%05d-%s-c000.snappy.parquet", i, sampleID(fmt.Sprintf("v%d/%d", v, i)))
	path := "region=" + f.region + "/" + name
	if err := g.store.PutIfAbsent(ctx, path, data); err != nil {
		return nil, err
	}
	t := CommitTime(v)
	if err := os.Chtimes(g.store.path(path), t, t); err != nil {
		return nil, err
	}
	region := f.region
	return &delta.Add{
		Path: path, PartitionValues: map[string]*string{"region": &region},
		Size: int64(len(data)), ModificationTime: t.UnixMilli(), DataChange: true, Stats: st,
	}, nil
}

// deleteActions deletes DeletedCustomer's orders from every live file that
// has some: one DV file holds a bitmap per such file, and each file is
// removed and re-added with its DV, in one commit.
func (g *generator) deleteActions(ctx context.Context, v int64) ([]*delta.Action, error) {
	var bitmaps []*roaring64.Bitmap
	var hit []int
	for i, lf := range g.live {
		if pos := deletedPositions(lf.spec); len(pos) > 0 {
			bitmaps = append(bitmaps, roaring64.BitmapOf(pos...))
			hit = append(hit, i)
		}
	}
	file, descs, err := delta.EncodeDVFile(bitmaps)
	if err != nil {
		return nil, err
	}
	id := sampleID(fmt.Sprintf("v%d/dv", v))
	if err := g.store.PutIfAbsent(ctx, "deletion_vector_"+id.String()+".bin", file); err != nil {
		return nil, err
	}
	var actions []*delta.Action
	var deleted int64
	for j, i := range hit {
		lf := &g.live[i]
		added, removed, err := withDV(lf, id, descs[j], CommitTime(v).UnixMilli())
		if err != nil {
			return nil, err
		}
		actions = append(actions, &delta.Action{Remove: removed}, &delta.Action{Add: added})
		lf.add = added
		deleted += descs[j].Cardinality
	}
	ci, err := commitInfo(v, "DELETE", map[string]any{"predicate": `["(customer = '` + DeletedCustomer + `')"]`},
		map[string]any{"numDeletedRows": fmt.Sprint(deleted), "numDeletionVectorsAdded": fmt.Sprint(len(hit))}, false)
	if err != nil {
		return nil, err
	}
	return append([]*delta.Action{ci}, actions...), nil
}

// withDV returns the remove of lf's current add and the add of the same
// file with the deletion vector rec of DV file id.
func withDV(lf *liveFile, id uuid.UUID, rec delta.DeletionVectorRecord, now int64) (*delta.Add, *delta.Remove, error) {
	old := lf.add
	st, err := stats(lf.spec, true)
	if err != nil {
		return nil, nil, err
	}
	size, ext := old.Size, true
	removed := &delta.Remove{
		Path: old.Path, DeletionTimestamp: &now, DataChange: true, ExtendedFileMetadata: &ext,
		PartitionValues: old.PartitionValues, Size: &size, Stats: old.Stats, DeletionVector: old.DeletionVector,
	}
	offset := rec.Offset
	added := *old
	added.Stats = st
	added.DeletionVector = &delta.DeletionVector{
		StorageType: "u", PathOrInlineDV: delta.Z85Encode(id[:]), Offset: &offset,
		SizeInBytes: rec.SizeInBytes, Cardinality: rec.Cardinality,
	}
	return &added, removed, nil
}

// commitInfo returns the commitInfo action of version v.
func commitInfo(v int64, op string, params, metrics map[string]any, blind bool) (*delta.Action, error) {
	ci := map[string]any{
		"timestamp": CommitTime(v).UnixMilli(), "operation": op, "operationParameters": params,
		"isolationLevel": "Serializable", "isBlindAppend": blind, "engineInfo": engineInfo,
		"txnId": sampleID(fmt.Sprintf("v%d/txn", v)).String(),
	}
	if v > 0 {
		ci["readVersion"] = v - 1
	}
	if metrics != nil {
		ci["operationMetrics"] = metrics
	}
	raw, err := json.Marshal(ci)
	if err != nil {
		return nil, err
	}
	return &delta.Action{CommitInfo: raw}, nil
}

// commit writes actions as version v with put-if-absent and dates the
// commit file CommitTime(v), which time travel by timestamp reads.
func (g *generator) commit(ctx context.Context, v int64, actions []*delta.Action) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // one line per action
	enc.SetEscapeHTML(false)
	for _, a := range actions {
		if err := enc.Encode(a); err != nil {
			return fmt.Errorf("encode commit: %w", err)
		}
	}
	key := delta.CommitKey(v)
	if err := g.store.PutIfAbsent(ctx, key, buf.Bytes()); err != nil {
		return err
	}
	t := CommitTime(v)
	return os.Chtimes(g.store.path(key), t, t)
}
