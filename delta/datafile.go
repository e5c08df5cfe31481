package delta

import (
	"github.com/deltafs/deltafs/pqfile"

	"context"
)

// LiveFile is a live data file of a snapshot with what a reader of its
// rows needs: where it is, its partition values under logical column names
// and its row counts.
type LiveFile struct {
	Add *Add
	// Key is the storage key of the data (the add path, URI-decoded).
	Key string
	// PartitionValues maps logical partition column names to values
	// (nil = null). It may be shared: do not modify it.
	PartitionValues map[string]*string
}

// noPartitionValues is the PartitionValues of every file of an
// unpartitioned table (LiveFile maps are read-only).
var noPartitionValues = map[string]*string{}

// LiveFiles returns the snapshot's live files with decoded keys and
// logical partition values, in log order.
func (s *Snapshot) LiveFiles() ([]LiveFile, error) {
	names, err := s.partitionNames()
	if err != nil {
		return nil, err
	}
	out := make([]LiveFile, len(s.files))
	for i, a := range s.files {
		if out[i], err = s.liveFile(a, names); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LiveFileOf returns the LiveFile of a (one of the snapshot's Files, or an
// equal add of another snapshot of the same table and metadata), so that
// callers can keep the add alone and rebuild the rest when needed.
func (s *Snapshot) LiveFileOf(a *Add) (LiveFile, error) {
	names, err := s.partitionNames()
	if err != nil {
		return LiveFile{}, err
	}
	return s.liveFile(a, names)
}

func (s *Snapshot) liveFile(a *Add, names map[string]string) (LiveFile, error) {
	key, err := s.DataKey(a)
	if err != nil {
		return LiveFile{}, &LogError{Table: s.table.name, Version: s.version, Key: a.Path, Err: err}
	}
	if len(names) == 0 { // unpartitioned: one shared empty map, not one a file
		return LiveFile{Add: a, Key: key, PartitionValues: noPartitionValues}, nil
	}
	pv := make(map[string]*string, len(names))
	for logical, physical := range names {
		pv[logical] = a.PartitionValues[physical]
	}
	return LiveFile{Add: a, Key: key, PartitionValues: pv}, nil
}

// partitionNames maps each logical partition column to the physical name
// that keys add.partitionValues. Computed once per snapshot (LiveFileOf
// asks for every file served); the map must not be modified.
func (s *Snapshot) partitionNames() (map[string]string, error) {
	s.pnOnce.Do(func() { s.pn, s.pnErr = s.computePartitionNames() })
	return s.pn, s.pnErr
}

func (s *Snapshot) computePartitionNames() (map[string]string, error) {
	md := s.Metadata()
	out := make(map[string]string, len(md.PartitionColumns))
	if len(md.PartitionColumns) == 0 {
		return out, nil
	}
	schema, err := s.Schema()
	if err != nil {
		return nil, &LogError{Table: s.table.name, Version: s.version, Err: err}
	}
	nm := NewNameMap(schema, s.ColumnMapping())
	for _, c := range md.PartitionColumns {
		p, ok := nm.Physical(c)
		if !ok {
			p = c
		}
		out[c] = p
	}
	return out, nil
}

// NumRecords returns a live file's physical row count: from its stats, or
// else from the Parquet footer of the data file.
func (s *Snapshot) NumRecords(ctx context.Context, a *Add) (int64, error) {
	if n, ok := a.NumRecords(); ok {
		return n, nil
	}
	key, err := s.DataKey(a)
	if err != nil {
		return 0, err
	}
	n, err := pqfile.FooterNumRows(NewReaderAt(ctx, s.table.store, key), a.Size)
	if err != nil {
		return 0, &LogError{Table: s.table.name, Version: s.version, Key: key, Err: err}
	}
	return n, nil
}
