package checkpoint

// Encoding a table state as a checkpoint (Encode): the row layout Spark
// writes, the V2-spec checkpointMetadata row, row groups of bounded size.

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"

	"github.com/deltafs/deltafs/delta/action"
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

// RowGroupRows bounds the rows of one row group of a checkpoint
// written here. The Parquet writer holds the current row group's pages in
// memory until it is flushed, so this bounds what writing a checkpoint
// holds whatever the table's size (about 10 MiB of page buffers at 32Ki
// adds with stats); a checkpoint of a million files is 31 row groups,
// which readers take one at a time.
var RowGroupRows int64 = 32 << 10

// State is what a checkpoint records: the reconciled state of one table
// version [PROTOCOL.md "Checkpoints"]. Encode reads it and keeps nothing.
type State struct {
	Version    int64
	Protocol   *action.Protocol
	Metadata   *action.Metadata
	Txns       map[string]*action.Txn            // by appId
	Domains    map[string]*action.DomainMetadata // live domains, by name
	Files      []*action.Add                     // live files, in log order
	Tombstones []*action.Remove                  // in log order
}

// Encode writes the checkpoint of st as Parquet to w and returns the
// number of rows (actions) written.
//
// The rows are st's protocol, metaData, txns and live domains, its live
// files (adds, with their deletion vectors) and all its tombstones
// (without stats and tags, as Spark writes them), in the column layout of
// a Spark V1 checkpoint, compressed and paged as the table's
// delta.parquet.* properties say (writerOptions). When the protocol
// supports the v2Checkpoint feature it is a V2-spec checkpoint instead:
// the same rows plus one checkpointMetadata row, every file action inline
// (no sidecars). Rows are written in row groups of at most RowGroupRows,
// so memory does not grow with the table.
//
// The add stats take the forms the table asks for: the JSON string unless
// delta.checkpoint.writeStatsAsJson is false, the typed stats_parsed and
// partitionValues_parsed columns when delta.checkpoint.writeStatsAsStruct
// is true (as Spark writes them).
func Encode(w io.Writer, st *State) (int64, error) {
	v2 := slices.Contains(st.Protocol.WriterFeatures, "v2Checkpoint")
	asJSON, asStruct := checkpointStatsForm(st.Metadata)
	if asStruct {
		l, err := newParsedLayout(st.Metadata)
		if err != nil {
			return 0, err
		}
		return writeCheckpointParsed(w, st, l, asJSON, v2)
	}
	wrap := func(r cpwRow) cpwRow {
		if !asJSON && r.Add != nil {
			r.Add.Stats = nil
		}
		return r
	}
	if !v2 {
		return writeCheckpointRows(w, st, wrap, nil)
	}
	v := st.Version
	first := []cpwRowV2{{CheckpointMetadata: &cpwCheckpointMetadata{Version: &v}}}
	return writeCheckpointRows(w, st, func(r cpwRow) cpwRowV2 { return cpwRowV2{cpwRow: wrap(r)} }, first)
}

// writeCheckpointRows writes first, then every row of st (wrapped as T),
// to a Parquet file named like Spark's ("spark_schema").
func writeCheckpointRows[T any](w io.Writer, st *State, wrap func(cpwRow) T, first []T) (int64, error) {
	schema := parquet.NewSchema("spark_schema", parquet.SchemaOf(new(T)))
	opts, err := writerOptions(st.Metadata)
	if err != nil {
		return 0, err
	}
	pw := parquet.NewGenericWriter[T](w, append(opts, schema, parquet.MaxRowsPerRowGroup(RowGroupRows))...)
	batch := append(make([]T, 0, checkpointBatch), first...)
	total := int64(0)
	flush := func() error {
		n, err := pw.Write(batch)
		total += int64(n)
		batch = batch[:0]
		return err
	}
	err = checkpointRows(st, func(r cpwRow) error {
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

// checkpointRows calls emit for each action of st's checkpoint: protocol,
// metaData, txns by appId, live domains by name, adds and removes in log
// order.
func checkpointRows(st *State, emit func(cpwRow) error) error {
	head := []cpwRow{{Protocol: cpwProtocolOf(st.Protocol)}, {MetaData: cpwMetadataOf(st.Metadata)}}
	for _, id := range sortedNames(st.Txns) {
		t := st.Txns[id]
		head = append(head, cpwRow{Txn: &cpwTxn{AppID: &t.AppID, Version: &t.Version, LastUpdated: t.LastUpdated}})
	}
	for _, name := range sortedNames(st.Domains) {
		d := st.Domains[name]
		head = append(head, cpwRow{DomainMetadata: &cpwDomain{Domain: &d.Domain, Configuration: &d.Configuration, Removed: &d.Removed}})
	}
	for _, r := range head {
		if err := emit(r); err != nil {
			return err
		}
	}
	for _, a := range st.Files {
		if err := emit(cpwRow{Add: cpwAddOf(a)}); err != nil {
			return err
		}
	}
	for _, r := range st.Tombstones {
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

func cpwProtocolOf(p *action.Protocol) *cpwProtocol {
	r, w := int32(p.MinReaderVersion), int32(p.MinWriterVersion)
	return &cpwProtocol{
		MinReaderVersion: &r, MinWriterVersion: &w,
		ReaderFeatures: strPtrs(p.ReaderFeatures), WriterFeatures: strPtrs(p.WriterFeatures),
	}
}

func cpwMetadataOf(m *action.Metadata) *cpwMetadata {
	return &cpwMetadata{
		ID: &m.ID, Name: nonEmpty(m.Name), Description: nonEmpty(m.Description),
		Format:       &cpwFormat{Provider: &m.Format.Provider, Options: strMap(m.Format.Options)},
		SchemaString: &m.SchemaString, PartitionColumns: strPtrs(m.PartitionColumns),
		Configuration: strMap(m.Configuration), CreatedTime: m.CreatedTime,
	}
}

func cpwAddOf(a *action.Add) *cpwAdd {
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
func addStats(a *action.Add) *string {
	if a.Stats == "" && a.NumRecordsParsed != nil {
		s := `{"numRecords":` + strconv.FormatInt(*a.NumRecordsParsed, 10) + `}`
		return &s
	}
	return nonEmpty(a.Stats)
}

func cpwRemoveOf(r *action.Remove) *cpwRemove {
	return &cpwRemove{
		Path: &r.Path, DeletionTimestamp: r.DeletionTimestamp, DataChange: &r.DataChange,
		ExtendedFileMetadata: r.ExtendedFileMetadata, PartitionValues: r.PartitionValues,
		Size: r.Size, DeletionVector: cpwDVOf(r.DeletionVector),
		BaseRowID: r.BaseRowID, DefaultRowCommitVersion: r.DefaultRowCommitVersion,
	}
}

func cpwDVOf(d *action.DeletionVector) *cpwDV {
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
