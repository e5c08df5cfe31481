package pqfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go/format"
)

// NullCountsKnown reports, for every column chunk of every row group of the encoded footer b
// (a thrift compact FileMetaData, decoded as meta), whether its statistics carry a null_count.
// Decoders give 0 for an absent null_count, which would claim "no nulls" for a chunk whose writer
// said nothing: a caller that proves nullability or writes Delta nullCount from the footer must
// ask this first.
func NullCountsKnown(b []byte, meta *format.FileMetaData) ([][]bool, error) {
	edits, err := statsEdits(b, meta)
	if err != nil {
		return nil, err
	}
	known := make([][]bool, len(meta.RowGroups))
	for i := range meta.RowGroups {
		known[i] = make([]bool, len(meta.RowGroups[i].Columns))
		for j := range known[i] {
			known[i][j] = editAt(edits, i, j) == keepStats
		}
	}
	return known, nil
}

func editAt(edits [][]statsEdit, rg, col int) statsEdit {
	if rg >= len(edits) || edits[rg] == nil || col >= len(edits[rg]) {
		return keepStats
	}
	return edits[rg][col]
}

// StatsDrop is what DropStatistics takes out of a column chunk's footer entry.
type StatsDrop uint8

// The StatsDrop values.
const (
	KeepStatistics    StatsDrop = iota // leave the chunk's statistics alone
	DropNullCount                      // remove null_count, keep min_value and max_value
	DropAllStatistics                  // remove the statistics field
)

// DropStatistics returns the Parquet file data with the statistics of the column chunks of leaf
// column col cut as drop(col) says: a footer as written by tools that record bounds but not
// nulls, or no statistics at all. It exists to build such files in tests of the code that must
// not trust what is absent.
func DropStatistics(data []byte, drop func(col int) StatsDrop) ([]byte, error) {
	f, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	edits := make([][]statsEdit, len(f.meta.RowGroups))
	for i, rg := range f.meta.RowGroups {
		edits[i] = make([]statsEdit, len(rg.Columns))
		for j := range rg.Columns {
			switch drop(j) {
			case DropNullCount:
				edits[i][j] = dropNullCount
			case DropAllStatistics:
				edits[i][j] = dropStats
			}
		}
	}
	body, err := stripStats(f.raw, edits)
	if err != nil {
		return nil, fmt.Errorf("drop statistics: %w", err)
	}
	out := append(slices.Clone(data[:f.start]), body...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	return append(out, magic...), nil
}
