package delta

// A Snapshot is one version of a table as built: its state, its commit's
// time and commitInfo, the segment it came from, and indexes over its
// files built on first use and charged to the state cache (Memo).

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Snapshot is the immutable state of a table at one version: its protocol,
// metadata, live files and tombstones. A Snapshot never changes after it is
// built, so it is shared without locks; slices and maps it returns must not
// be modified by callers.
type Snapshot struct {
	table      *Table
	version    int64
	state      *tableState
	files      []*Add    // live files in log order
	timestamp  time.Time // commit time of this version (ICT or commit file mtime)
	commitInfo json.RawMessage
	segment    *LogSegment // the log files it was built from; set by build, read-only after
	base       stateKey    // the cached state it was replayed onto (version -1: none); set by build

	schemaOnce sync.Once
	schema     *StructType
	schemaErr  error

	pnOnce sync.Once
	pn     map[string]string // logical partition column -> physical name
	pnErr  error

	memoOnce sync.Once
	memo     any
	memoErr  error
}

// Memo returns what build derived from this snapshot (a caller's index of
// its files, say), building it on first use. The value lives as long as
// the snapshot stays in the table's cache, and its cost (bytes, as build
// estimates them) is charged to that cache's budget, so derived data is
// evicted with the snapshot it describes and rebuilt with it. One memo a
// snapshot: build must be the same function for every caller.
func (s *Snapshot) Memo(build func() (v any, bytes int64, err error)) (any, error) {
	s.memoOnce.Do(func() {
		var n int64
		s.memo, n, s.memoErr = build()
		if s.memoErr == nil && n > 0 {
			s.table.states.charge(s, n)
		}
	})
	return s.memo, s.memoErr
}

func newSnapshot(t *Table, version int64, st *tableState, commit *commitFile) *Snapshot {
	s := &Snapshot{table: t, version: version, state: st, files: st.files}
	if commit != nil {
		s.timestamp = commit.file.ModTime
		for _, a := range commit.actions {
			if a.CommitInfo != nil {
				s.commitInfo = a.CommitInfo
				if ict, ok := inCommitTimestamp(a.CommitInfo); ok && st.metadata.InCommitTimestampsEnabled() {
					s.timestamp = time.UnixMilli(ict).UTC()
				}
				break
			}
		}
	}
	return s
}

// Table returns the name of the table (its location, without credentials).
func (s *Snapshot) Table() string { return s.table.name }

// Version returns the snapshot's version.
func (s *Snapshot) Version() int64 { return s.version }

// Protocol returns the table's protocol at this version.
func (s *Snapshot) Protocol() *Protocol { return s.state.protocol }

// Metadata returns the table's metadata at this version.
func (s *Snapshot) Metadata() *Metadata { return s.state.metadata }

// ColumnMapping returns the column mapping mode the snapshot honours: its
// metadata's, when its protocol supports the feature (ColumnMappingFor).
func (s *Snapshot) ColumnMapping() ColumnMappingMode {
	return ColumnMappingFor(s.Protocol(), s.Metadata())
}

// Schema returns the parsed table schema (logical names).
func (s *Snapshot) Schema() (*StructType, error) {
	s.schemaOnce.Do(func() { s.schema, s.schemaErr = s.state.metadata.Schema() })
	return s.schema, s.schemaErr
}

// Files returns the live data files in log order (checkpoint rows, then
// commits). Do not modify the slice or the actions.
func (s *Snapshot) Files() []*Add { return s.files }

// Tombstones returns the remove actions still kept for this version, in
// log order. Do not modify.
func (s *Snapshot) Tombstones() []*Remove {
	return s.state.tombstones
}

// Txn returns the latest transaction version recorded for an application.
func (s *Snapshot) Txn(appID string) (*Txn, bool) {
	t, ok := s.state.txns[appID]
	return t, ok
}

// Domain returns a live domain's metadata.
func (s *Snapshot) Domain(name string) (*DomainMetadata, bool) {
	d, ok := s.state.domains[name]
	return d, ok
}

// Timestamp returns the commit time of this version: the in-commit
// timestamp when enabled, else the commit file's modification time (zero
// when the commit file of a checkpoint-only version is gone).
func (s *Snapshot) Timestamp() time.Time { return s.timestamp }

// CommitInfo returns the raw commitInfo of this version's commit, if any.
func (s *Snapshot) CommitInfo() json.RawMessage { return s.commitInfo }

// DeletedRows returns the row positions deleted from a live file by its
// deletion vector: an empty bitmap when it has none.
func (s *Snapshot) DeletedRows(ctx context.Context, a *Add) (*roaring64.Bitmap, error) {
	if a.DeletionVector == nil {
		return roaring64.New(), nil
	}
	bm, err := LoadDeletionVector(ctx, s.table.store, s.table.name, a.DeletionVector)
	if err != nil {
		return nil, &LogError{Table: s.table.name, Version: s.version, Key: a.Path, Err: fmt.Errorf("deletion vector: %w", err)}
	}
	return bm, nil
}

// DataKey returns the storage key of a live file's data.
func (s *Snapshot) DataKey(a *Add) (string, error) {
	return ResolvePath(s.table.name, a.Path)
}

// inCommitTimestamp extracts commitInfo.inCommitTimestamp.
func inCommitTimestamp(ci json.RawMessage) (int64, bool) {
	var v struct {
		ICT *int64 `json:"inCommitTimestamp"`
	}
	if json.Unmarshal(ci, &v) != nil || v.ICT == nil {
		return 0, false
	}
	return *v.ICT, true
}

// CheckpointVersion is the version of the checkpoint the snapshot was
// built from, -1 when none (replayed from the first commit) or unknown.
// A snapshot built on a cached state keeps that state's checkpoint.
func (s *Snapshot) CheckpointVersion() int64 {
	if s.segment == nil {
		return -1
	}
	return s.segment.CheckpointVersion
}
