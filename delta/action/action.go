// Package action defines what a Delta log is made of: the actions of
// commits and checkpoints (add, remove, metaData, protocol, txn,
// domainMetadata, cdc, checkpointMetadata, sidecar) with the JSON forms
// the protocol gives them [PROTOCOL.md "Actions"], the table schema
// [PROTOCOL.md "Schema Serialization Format"] and the table properties and
// features read off an action. It is a leaf: it does no I/O and imports
// nothing of deltafs, so the checkpoint codec and the log engine share it.
package action

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Action is one line of a commit or one row of a checkpoint: exactly one of
// its fields is set. Unknown action types decode to an Action with no field
// set and are ignored, as the protocol requires.
type Action struct {
	Add                *Add                `json:"add,omitempty"`
	Remove             *Remove             `json:"remove,omitempty"`
	MetaData           *Metadata           `json:"metaData,omitempty"`
	Protocol           *Protocol           `json:"protocol,omitempty"`
	Txn                *Txn                `json:"txn,omitempty"`
	CommitInfo         json.RawMessage     `json:"commitInfo,omitempty"`
	DomainMetadata     *DomainMetadata     `json:"domainMetadata,omitempty"`
	CDC                *CDC                `json:"cdc,omitempty"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
	Sidecar            *Sidecar            `json:"sidecar,omitempty"`
}

// Protocol is the protocol action: the reader/writer versions and features
// a client needs to read or write the table.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// Format is the data file format of a table (always parquet).
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action. PartitionColumns are logical names.
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
	Configuration    map[string]string `json:"configuration"`
}

// DeletionVector is a deletion vector descriptor (add/remove.deletionVector).
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDV string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
}

// UniqueID is the descriptor's identity: storage type + path, plus
// "@offset" only when the offset is present.
func (d *DeletionVector) UniqueID() string {
	if d == nil {
		return ""
	}
	id := d.StorageType + d.PathOrInlineDV
	if d.Offset != nil {
		id += "@" + strconv.FormatInt(int64(*d.Offset), 10)
	}
	return id
}

// Add is the add action: a data file (with an optional deletion vector)
// that becomes part of the table. Path is as written in the log
// (URI-encoded); use DecodedPath for the object name.
type Add struct {
	Path                    string             `json:"path"`
	PartitionValues         map[string]*string `json:"partitionValues"`
	Size                    int64              `json:"size"`
	ModificationTime        int64              `json:"modificationTime"`
	DataChange              bool               `json:"dataChange"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      *string            `json:"clusteringProvider,omitempty"`

	// NumRecordsParsed is the physical row count taken from a checkpoint's
	// stats_parsed column, nil when absent. Use NumRecords.
	NumRecordsParsed *int64 `json:"-"`
}

// NumRecords returns the physical number of rows of the file, from the
// stats (JSON or parsed); ok is false when no stats carry it.
func (a *Add) NumRecords() (n int64, ok bool) {
	if a.Stats != "" {
		if n, ok := StatsNumRecords(a.Stats); ok {
			return n, true
		}
	}
	if a.NumRecordsParsed != nil {
		return *a.NumRecordsParsed, true
	}
	return 0, false
}

// Key is the file's identity in the log: its path and deletion vector
// [PROTOCOL.md "Action Reconciliation"].
func (a *Add) Key() string { return FileKey(a.Path, a.DeletionVector) }

// Remove is the remove action (a tombstone).
type Remove struct {
	Path                    string             `json:"path"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`
	DataChange              bool               `json:"dataChange"`
	ExtendedFileMetadata    *bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`
	Size                    *int64             `json:"size,omitempty"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
}

// Key is the file's identity in the log, as Add.Key.
func (r *Remove) Key() string { return FileKey(r.Path, r.DeletionVector) }

// Txn is a set-transaction (application transaction id).
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// DomainMetadata is a domainMetadata action.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
}

// CDC is an add-CDC-file action; readers of table state ignore it.
type CDC struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	DataChange      bool               `json:"dataChange"`
}

// CheckpointMetadata is the checkpointMetadata action of a V2 checkpoint.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Sidecar points a V2 checkpoint at a file of add/remove actions.
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// FileKey is (path, dvUniqueId) joined by a separator that cannot occur in
// a path of the log.
func FileKey(path string, dv *DeletionVector) string {
	if dv == nil {
		return path
	}
	return path + "\x00" + dv.UniqueID()
}

// Parse decodes NDJSON actions (a commit or a JSON checkpoint) and
// calls fn for each. Blank lines are skipped; a line that is not a JSON
// object is an error wrapping ErrCorruptLog that names the line number.
func Parse(data []byte, fn func(*Action) error) error {
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if len(l) > MaxLineBytes {
			return corruptf("line %d is %d bytes, over the limit of %d bytes a log line", line, len(l), MaxLineBytes)
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		if l[0] != '{' {
			return corruptf("line %d: not a JSON object", line)
		}
		a := new(Action)
		if err := json.Unmarshal(l, a); err != nil {
			return corruptf("line %d: %v", line, err)
		}
		if err := a.Validate(); err != nil {
			return corruptf("line %d: %v", line, err)
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the fields the protocol requires of the set action.
func (a *Action) Validate() error {
	switch {
	case a.Add != nil:
		if a.Add.Path == "" {
			return fmt.Errorf("add action without path")
		}
	case a.Remove != nil:
		if a.Remove.Path == "" {
			return fmt.Errorf("remove action without path")
		}
	case a.Protocol != nil:
		if a.Protocol.MinReaderVersion <= 0 || a.Protocol.MinWriterVersion <= 0 {
			return fmt.Errorf("protocol action without minReaderVersion/minWriterVersion")
		}
	}
	return nil
}

// StatsNumRecords extracts the top-level numRecords from a stats JSON
// string. The common layout (numRecords as the first key, as Spark, Kernel
// and delta-rs write it) is read without decoding the rest (stats can be
// large; replay only needs this); any other layout is decoded, because a
// column named "numRecords" puts that key inside minValues/maxValues/
// nullCount too and the protocol fixes no key order.
func StatsNumRecords(stats string) (int64, bool) {
	const k = `{"numRecords":`
	if s, ok := strings.CutPrefix(stats, k); ok {
		end := 0
		for end < len(s) && (s[end] == '-' || (s[end] >= '0' && s[end] <= '9')) {
			end++
		}
		if n, err := strconv.ParseInt(s[:end], 10, 64); err == nil {
			return n, true
		}
	}
	var v struct {
		NumRecords *json.Number `json:"numRecords"`
	}
	if json.Unmarshal([]byte(stats), &v) != nil || v.NumRecords == nil {
		return 0, false
	}
	n, err := v.NumRecords.Int64()
	return n, err == nil
}
