package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// The row layout of a checkpoint as Spark writes it (the schema of the
// fixtures' Spark checkpoints, "spark_schema"): one nullable struct column
// per action, every field nullable, MAPs with required keys and nullable
// values, LISTs in the 3-level layout with nullable elements. nil pointers,
// maps and slices are written as nulls; empty ones as empty.
type (
	cpwDV struct {
		StorageType    *string `parquet:"storageType,optional"`
		PathOrInlineDv *string `parquet:"pathOrInlineDv,optional"`
		Offset         *int32  `parquet:"offset,optional"`
		SizeInBytes    *int32  `parquet:"sizeInBytes,optional"`
		Cardinality    *int64  `parquet:"cardinality,optional"`
		MaxRowIndex    *int64  `parquet:"maxRowIndex,optional"`
	}
	cpwAdd struct {
		Path                    *string            `parquet:"path,optional"`
		PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
		Size                    *int64             `parquet:"size,optional"`
		ModificationTime        *int64             `parquet:"modificationTime,optional"`
		DataChange              *bool              `parquet:"dataChange,optional"`
		Tags                    map[string]*string `parquet:"tags,optional"`
		DeletionVector          *cpwDV             `parquet:"deletionVector,optional"`
		BaseRowID               *int64             `parquet:"baseRowId,optional"`
		DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
		ClusteringProvider      *string            `parquet:"clusteringProvider,optional"`
		Stats                   *string            `parquet:"stats,optional"`
	}
	cpwRemove struct {
		Path                    *string            `parquet:"path,optional"`
		DeletionTimestamp       *int64             `parquet:"deletionTimestamp,optional"`
		DataChange              *bool              `parquet:"dataChange,optional"`
		ExtendedFileMetadata    *bool              `parquet:"extendedFileMetadata,optional"`
		PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
		Size                    *int64             `parquet:"size,optional"`
		DeletionVector          *cpwDV             `parquet:"deletionVector,optional"`
		BaseRowID               *int64             `parquet:"baseRowId,optional"`
		DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
	}
	cpwFormat struct {
		Provider *string            `parquet:"provider,optional"`
		Options  map[string]*string `parquet:"options,optional"`
	}
	cpwMetadata struct {
		ID               *string            `parquet:"id,optional"`
		Name             *string            `parquet:"name,optional"`
		Description      *string            `parquet:"description,optional"`
		Format           *cpwFormat         `parquet:"format,optional"`
		SchemaString     *string            `parquet:"schemaString,optional"`
		PartitionColumns []*string          `parquet:"partitionColumns,optional,list"`
		Configuration    map[string]*string `parquet:"configuration,optional"`
		CreatedTime      *int64             `parquet:"createdTime,optional"`
	}
	cpwProtocol struct {
		MinReaderVersion *int32    `parquet:"minReaderVersion,optional"`
		MinWriterVersion *int32    `parquet:"minWriterVersion,optional"`
		ReaderFeatures   []*string `parquet:"readerFeatures,optional,list"`
		WriterFeatures   []*string `parquet:"writerFeatures,optional,list"`
	}
	cpwTxn struct {
		AppID       *string `parquet:"appId,optional"`
		Version     *int64  `parquet:"version,optional"`
		LastUpdated *int64  `parquet:"lastUpdated,optional"`
	}
	cpwDomain struct {
		Domain        *string `parquet:"domain,optional"`
		Configuration *string `parquet:"configuration,optional"`
		Removed       *bool   `parquet:"removed,optional"`
	}
	cpwCheckpointMetadata struct {
		Version *int64             `parquet:"version,optional"`
		Tags    map[string]*string `parquet:"tags,optional"`
	}
	// cpwRow is one row of a V1 checkpoint: exactly one field is set.
	cpwRow struct {
		Txn            *cpwTxn      `parquet:"txn,optional"`
		Add            *cpwAdd      `parquet:"add,optional"`
		Remove         *cpwRemove   `parquet:"remove,optional"`
		MetaData       *cpwMetadata `parquet:"metaData,optional"`
		Protocol       *cpwProtocol `parquet:"protocol,optional"`
		DomainMetadata *cpwDomain   `parquet:"domainMetadata,optional"`
	}
	// cpwRowV2 is one row of a V2-spec checkpoint: the V1 columns plus
	// checkpointMetadata.
	cpwRowV2 struct {
		cpwRow
		CheckpointMetadata *cpwCheckpointMetadata `parquet:"checkpointMetadata,optional"`
	}
)

// checkpointBatch is how many rows are handed to the Parquet writer at once.
const checkpointBatch = 1024

// checkpointRowGroupRows bounds the rows of one row group of a checkpoint
// written here. The Parquet writer holds the current row group's pages in
// memory until it is flushed, so this bounds what writing a checkpoint
// holds whatever the table's size (about 10 MiB of page buffers at 32Ki
// adds with stats); a checkpoint of a million files is 31 row groups,
// which readers take one at a time.
var checkpointRowGroupRows int64 = 32 << 10

// WriteCheckpoint writes a single-file checkpoint of snap at
// _delta_log/<version>.checkpoint.parquet, then points _last_checkpoint at
// it unless the hint already names a newer version.
//
// The checkpoint holds the snapshot's protocol, metaData, txns and live
// domains, its live files (adds, with their deletion vectors) and all its
// tombstones (without stats and tags, as Spark writes them), in the column
// layout of a Spark V1 checkpoint (compressed and paged as the table's
// delta.parquet.* properties say: checkpointWriterOptions). When the table
// supports the v2Checkpoint feature it is a classic-named V2-spec
// checkpoint instead: the same rows plus one checkpointMetadata row, with
// every file action inline (no sidecars).
//
// It does not check that the table may be written (writer features): that
// is the caller's decision. Tombstones are not expired by retention.
//
// The file is streamed to one Put as it is encoded, in row groups of at
// most checkpointRowGroupRows rows: memory does not grow with the table
// beyond the snapshot itself. Checkpoints may be overwritten, since every
// checkpoint of a version is equivalent; a Put that fails midway stores
// nothing (a local store writes a temporary file and renames it, an object
// store aborts the upload). An error leaves the table's commits untouched;
// a failure after the checkpoint is stored only leaves _last_checkpoint
// stale, which readers tolerate.
func WriteCheckpoint(ctx context.Context, s Storage, snap *Snapshot) error {
	v := snap.Version()
	rows, size, err := putCheckpoint(ctx, s, snap)
	if err != nil {
		return fmt.Errorf("write checkpoint %d of %s: %w", v, s, err)
	}
	adds := int64(len(snap.Files()))
	lc := LastCheckpoint{Version: v, Size: rows, SizeInBytes: &size, NumOfAddFiles: &adds}
	if err := writeLastCheckpoint(ctx, s, lc); err != nil {
		return fmt.Errorf("checkpoint %d of %s written, but: %w", v, s, err)
	}
	return nil
}

// errPutStopped is what the encoder of a checkpoint gets when the Put
// reading it returned before the end of the body.
var errPutStopped = errors.New("the store stopped reading the checkpoint before its end")

// putCheckpoint encodes snap's checkpoint into a pipe that one Put reads,
// and returns its rows (actions) and bytes. An encoding error is
// returned as such (the Put sees it as a failed read and stores nothing);
// a Put that returns, even with nil, before reading the whole body fails.
func putCheckpoint(ctx context.Context, s Storage, snap *Snapshot) (rows, size int64, err error) {
	pr, pw := io.Pipe()
	cw := &countingWriter{w: pw}
	done := make(chan error, 1)
	go func() {
		n, err := encodeCheckpoint(cw, snap)
		rows = n
		pw.CloseWithError(err) // nil: the reader gets EOF
		done <- err
	}()
	putErr := s.Put(ctx, CheckpointKey(snap.Version()), pr)
	pr.CloseWithError(errPutStopped) // unblocks the encoder if Put stopped reading
	encErr := <-done
	switch {
	case encErr != nil && !errors.Is(encErr, errPutStopped):
		return 0, 0, encErr
	case putErr != nil:
		return 0, 0, putErr
	case encErr != nil:
		return 0, 0, encErr
	}
	return rows, cw.n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encodeCheckpoint writes snap's checkpoint as Parquet to w and returns the
// number of rows (actions) written.
//
// The add stats take the forms the table asks for: the JSON string unless
// delta.checkpoint.writeStatsAsJson is false, the typed stats_parsed and
// partitionValues_parsed columns when delta.checkpoint.writeStatsAsStruct
// is true (as Spark writes them).
func encodeCheckpoint(w io.Writer, snap *Snapshot) (int64, error) {
	v2 := slices.Contains(snap.Protocol().WriterFeatures, "v2Checkpoint")
	asJSON, asStruct := checkpointStatsForm(snap.Metadata())
	if asStruct {
		l, err := newParsedLayout(snap.Metadata())
		if err != nil {
			return 0, err
		}
		return writeCheckpointParsed(w, snap, l, asJSON, v2)
	}
	wrap := func(r cpwRow) cpwRow {
		if !asJSON && r.Add != nil {
			r.Add.Stats = nil
		}
		return r
	}
	if !v2 {
		return writeCheckpointRows(w, snap, wrap, nil)
	}
	v := snap.Version()
	first := []cpwRowV2{{CheckpointMetadata: &cpwCheckpointMetadata{Version: &v}}}
	return writeCheckpointRows(w, snap, func(r cpwRow) cpwRowV2 { return cpwRowV2{cpwRow: wrap(r)} }, first)
}

// writeCheckpointRows writes first, then every row of snap (wrapped as T),
// to a Parquet file named like Spark's ("spark_schema").
func writeCheckpointRows[T any](w io.Writer, snap *Snapshot, wrap func(cpwRow) T, first []T) (int64, error) {
	schema := parquet.NewSchema("spark_schema", parquet.SchemaOf(new(T)))
	opts, err := checkpointWriterOptions(snap.Metadata())
	if err != nil {
		return 0, err
	}
	pw := parquet.NewGenericWriter[T](w, append(opts, schema, parquet.MaxRowsPerRowGroup(checkpointRowGroupRows))...)
	batch := append(make([]T, 0, checkpointBatch), first...)
	total := int64(0)
	flush := func() error {
		n, err := pw.Write(batch)
		total += int64(n)
		batch = batch[:0]
		return err
	}
	err = checkpointRows(snap, func(r cpwRow) error {
		batch = append(batch, wrap(r))
		if len(batch) < checkpointBatch {
			return nil
		}
		return flush()
	})
	if err == nil {
		err = flush()
	}
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("encode parquet: %w", err)
	}
	return total, nil
}

// checkpointRows calls emit for each action of snap's checkpoint: protocol,
// metaData, txns by appId, live domains by name, adds and removes in log
// order.
func checkpointRows(snap *Snapshot, emit func(cpwRow) error) error {
	st := snap.state
	head := []cpwRow{{Protocol: cpwProtocolOf(st.protocol)}, {MetaData: cpwMetadataOf(st.metadata)}}
	for _, id := range sortedNames(st.txns) {
		t := st.txns[id]
		head = append(head, cpwRow{Txn: &cpwTxn{AppID: &t.AppID, Version: &t.Version, LastUpdated: t.LastUpdated}})
	}
	for _, name := range sortedNames(st.domains) {
		d := st.domains[name]
		head = append(head, cpwRow{DomainMetadata: &cpwDomain{Domain: &d.Domain, Configuration: &d.Configuration, Removed: &d.Removed}})
	}
	for _, r := range head {
		if err := emit(r); err != nil {
			return err
		}
	}
	for _, a := range st.files {
		if err := emit(cpwRow{Add: cpwAddOf(a)}); err != nil {
			return err
		}
	}
	for _, r := range st.tombstones {
		if err := emit(cpwRow{Remove: cpwRemoveOf(r)}); err != nil {
			return err
		}
	}
	return nil
}

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func cpwProtocolOf(p *Protocol) *cpwProtocol {
	r, w := int32(p.MinReaderVersion), int32(p.MinWriterVersion)
	return &cpwProtocol{
		MinReaderVersion: &r, MinWriterVersion: &w,
		ReaderFeatures: strPtrs(p.ReaderFeatures), WriterFeatures: strPtrs(p.WriterFeatures),
	}
}

func cpwMetadataOf(m *Metadata) *cpwMetadata {
	return &cpwMetadata{
		ID: &m.ID, Name: nonEmpty(m.Name), Description: nonEmpty(m.Description),
		Format:       &cpwFormat{Provider: &m.Format.Provider, Options: strMap(m.Format.Options)},
		SchemaString: &m.SchemaString, PartitionColumns: strPtrs(m.PartitionColumns),
		Configuration: strMap(m.Configuration), CreatedTime: m.CreatedTime,
	}
}

func cpwAddOf(a *Add) *cpwAdd {
	return &cpwAdd{
		Path: &a.Path, PartitionValues: a.PartitionValues, Size: &a.Size,
		ModificationTime: &a.ModificationTime, DataChange: &a.DataChange,
		Tags: strMap(a.Tags), DeletionVector: cpwDVOf(a.DeletionVector),
		BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion,
		ClusteringProvider: a.ClusteringProvider, Stats: addStats(a),
	}
}

// addStats is a's stats JSON; when only a checkpoint's stats_parsed carried
// the row count, it becomes {"numRecords":N} so that the count survives.
func addStats(a *Add) *string {
	if a.Stats == "" && a.NumRecordsParsed != nil {
		s := `{"numRecords":` + strconv.FormatInt(*a.NumRecordsParsed, 10) + `}`
		return &s
	}
	return nonEmpty(a.Stats)
}

func cpwRemoveOf(r *Remove) *cpwRemove {
	return &cpwRemove{
		Path: &r.Path, DeletionTimestamp: r.DeletionTimestamp, DataChange: &r.DataChange,
		ExtendedFileMetadata: r.ExtendedFileMetadata, PartitionValues: r.PartitionValues,
		Size: r.Size, DeletionVector: cpwDVOf(r.DeletionVector),
		BaseRowID: r.BaseRowID, DefaultRowCommitVersion: r.DefaultRowCommitVersion,
	}
}

func cpwDVOf(d *DeletionVector) *cpwDV {
	if d == nil {
		return nil
	}
	return &cpwDV{
		StorageType: &d.StorageType, PathOrInlineDv: &d.PathOrInlineDV, Offset: d.Offset,
		SizeInBytes: &d.SizeInBytes, Cardinality: &d.Cardinality,
	}
}

// strPtrs converts a list, keeping nil (null) apart from empty.
func strPtrs(s []string) []*string {
	if s == nil {
		return nil
	}
	out := make([]*string, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// strMap converts a map, keeping nil (null) apart from empty.
func strMap(m map[string]string) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

// nonEmpty is nil for "" (a field JSON omits when empty).
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// writeLastCheckpoint stores lc (with its checksum) as _last_checkpoint,
// unless the current hint is valid and names a newer version: a slow
// writer must not move the hint backwards.
func writeLastCheckpoint(ctx context.Context, s Storage, lc LastCheckpoint) error {
	cur, ok, err := readLastCheckpoint(ctx, s)
	if err != nil && !errors.Is(err, ErrNotExist) {
		return fmt.Errorf("read %s: %w", LastCheckpointKey, err)
	}
	if ok && cur.Version > lc.Version {
		return nil
	}
	data, err := json.Marshal(lc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", LastCheckpointKey, err)
	}
	if lc.Checksum, err = lastCheckpointChecksum(data); err != nil {
		return fmt.Errorf("checksum %s: %w", LastCheckpointKey, err)
	}
	if data, err = json.Marshal(lc); err != nil {
		return fmt.Errorf("encode %s: %w", LastCheckpointKey, err)
	}
	if err := s.Put(ctx, LastCheckpointKey, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("write %s: %w", LastCheckpointKey, err)
	}
	return nil
}
