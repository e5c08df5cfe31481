package pqfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go/format"
)

// ChunkStats is what the footer statistics of one column chunk state beyond their values.
type ChunkStats struct {
	// NullCount: the statistics carry a null_count. Decoders give 0 for an absent one, which
	// would claim "no nulls" for a chunk whose writer said nothing.
	NullCount bool
	// Inexact: is_min_value_exact or is_max_value_exact is false, so min_value or max_value is
	// only a bound (a truncated string), not a value of the chunk. Decoders drop these fields.
	Inexact bool
}

// Field ids of Statistics.is_max_value_exact and is_min_value_exact.
const (
	idStatsMaxExact = 7
	idStatsMinExact = 8
)

// FooterChunkStats reads, for every column chunk of every row group of the encoded footer b (a
// thrift compact FileMetaData, decoded as meta), what its statistics state (ChunkStats). A caller
// that proves nullability or writes exact statistics from the footer must ask this first.
func FooterChunkStats(b []byte, meta *format.FileMetaData) ([][]ChunkStats, error) {
	out := make([][]ChunkStats, len(meta.RowGroups))
	for i := range meta.RowGroups {
		out[i] = make([]ChunkStats, len(meta.RowGroups[i].Columns))
	}
	seen := 0
	err := thriftBuf(b).walkChunkMeta(nil, func(rg, col int, md []tfield) error {
		if rg >= len(out) || col >= len(out[rg]) {
			return thriftCorrupt("row group %d column %d is not in the decoded footer", rg, col)
		}
		seen++
		for _, f := range md {
			if !isStats(f) {
				continue
			}
			_, err := thriftBuf(b).skipStruct(f.value, 0, func(f tfield, _ int) (int, error) {
				switch {
				case isNullCount(f):
					out[rg][col].NullCount = true
				case (f.id == idStatsMaxExact || f.id == idStatsMinExact) && f.typ == tFalse:
					out[rg][col].Inexact = true
				}
				return -1, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read footer statistics: %w", err)
	}
	if err := checkChunkCount(meta, seen); err != nil {
		return nil, err
	}
	return out, nil
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
