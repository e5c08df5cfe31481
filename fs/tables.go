package fs

import (
	"fmt"

	"github.com/deltafs/deltafs/delta"
)

// tableIndex finds the mounted table a snapshot belongs to, by the
// table's location (Snapshot.Table). It is immutable after newTableIndex.
type tableIndex struct {
	byLocation map[string]*mountedTable
}

func newTableIndex(ts []*mountedTable) *tableIndex {
	ix := &tableIndex{byLocation: make(map[string]*mountedTable, len(ts))}
	for _, t := range ts {
		ix.byLocation[t.table.Name()] = t
	}
	return ix
}

func (ix *tableIndex) of(snap *delta.Snapshot) (*mountedTable, error) {
	t, ok := ix.byLocation[snap.Table()]
	if !ok {
		return nil, fmt.Errorf("snapshot of unknown table %s", snap.Table())
	}
	return t, nil
}
