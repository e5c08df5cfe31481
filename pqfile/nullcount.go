package pqfile

import (
	"encoding/binary"
	"fmt"

	"github.com/parquet-go/parquet-go/format"
)

// parquet-go's thrift writes ColumnMetaData.statistics and Statistics.null_count even when zero
// ("writezero"), so a footer re-encoded from a decoded source footer says null_count = 0 for a
// column chunk whose source said nothing about its nulls (statistics disabled, old writers). A
// reader pruning on statistics would then skip the chunk for "x IS NULL". The functions here find
// what each source chunk said (statsEdits) and take back from the encoded output footer what a
// copied chunk's source did not say (stripStats). Chunks produced by re-encoding have exact null
// counts and are left alone.

// statsEdit is what the output footer entry of a column chunk copied from the source must leave
// out so as to claim no more about its nulls than the source did.
type statsEdit uint8

const (
	// keepStats: the source chunk had statistics with a null_count; nothing to leave out.
	keepStats statsEdit = iota
	// dropNullCount: the source chunk had statistics without a null_count.
	dropNullCount
	// dropStats: the source chunk had no statistics (or no meta_data).
	dropStats
)

// Field ids of parquet.thrift on the way to Statistics.null_count, as tagged in parquet-go's
// format package.
const (
	idFileRowGroups   = 4  // FileMetaData.row_groups: list<RowGroup>
	idRowGroupColumns = 1  // RowGroup.columns: list<ColumnChunk>
	idChunkMetaData   = 3  // ColumnChunk.meta_data: ColumnMetaData
	idMetaStatistics  = 12 // ColumnMetaData.statistics: Statistics
	idStatsNullCount  = 3  // Statistics.null_count: i64
)

var (
	isStats     = isField(idMetaStatistics, tStruct)
	isNullCount = isField(idStatsNullCount, tI64)
)

// chunkMetaFunc receives the fields of the ColumnMetaData of column col of row group rg (empty when
// the chunk has no meta_data); md is reused for the next chunk once the function returns.
type chunkMetaFunc func(rg, col int, md []tfield) error

// walkChunkMeta walks the encoded FileMetaData b (exactly: no trailing bytes) and calls fn for
// every column chunk of every row group but those for which skipGroup (nil: none) is true.
func (b thriftBuf) walkChunkMeta(skipGroup func(rg int) bool, fn chunkMetaFunc) error {
	var mdBuf []tfield
	visitGroup := func(rg, off, depth int) (int, error) {
		if skipGroup != nil && skipGroup(rg) {
			return -1, nil
		}
		return b.walkRowGroup(rg, off, depth, &mdBuf, fn)
	}
	end, err := b.skipStruct(0, 0, func(f tfield, depth int) (int, error) {
		if f.id != idFileRowGroups || f.typ != tList {
			return -1, nil
		}
		return b.walkList(f.value, depth+1, visitGroup)
	})
	if err != nil {
		return err
	}
	if end != len(b) {
		return thriftCorrupt("%d trailing bytes after the footer", len(b)-end)
	}
	return nil
}

// walkRowGroup walks the RowGroup rg at off and calls fn for each of its column chunks, with the
// ColumnMetaData fields collected in *mdBuf.
func (b thriftBuf) walkRowGroup(rg, off, depth int, mdBuf *[]tfield, fn chunkMetaFunc) (int, error) {
	visitChunk := func(col, off, depth int) (int, error) {
		md := (*mdBuf)[:0]
		end, err := b.skipStruct(off, depth, func(f tfield, depth int) (int, error) {
			if f.id != idChunkMetaData || f.typ != tStruct {
				return -1, nil
			}
			var end int
			var err error
			md, end, err = b.structFields(md[:0], true, f.value, depth+1, nil)
			return end, err
		})
		if err != nil {
			return 0, err
		}
		*mdBuf = md
		return end, fn(rg, col, md)
	}
	return b.skipStruct(off, depth, func(f tfield, depth int) (int, error) {
		if f.id != idRowGroupColumns || f.typ != tList {
			return -1, nil
		}
		return b.walkList(f.value, depth+1, visitChunk)
	})
}

// isField returns a predicate true for the fields id of type typ.
func isField(id int16, typ byte) func(tfield) bool {
	return func(f tfield) bool { return f.id == id && f.typ == typ }
}

// statsEdits reads the encoded source footer b (decoded as meta) and returns, per row group, what
// a copy of each column chunk must leave out (nil for a row group with nothing to leave out).
func statsEdits(b []byte, meta *format.FileMetaData) ([][]statsEdit, error) {
	edits := make([][]statsEdit, len(meta.RowGroups))
	seen := 0
	err := thriftBuf(b).walkChunkMeta(nil, func(rg, col int, md []tfield) error {
		if rg >= len(meta.RowGroups) || col >= len(meta.RowGroups[rg].Columns) {
			return thriftCorrupt("row group %d column %d is not in the decoded footer", rg, col)
		}
		seen++
		e, err := thriftBuf(b).chunkStatsEdit(md)
		if err != nil || e == keepStats {
			return err
		}
		if edits[rg] == nil {
			edits[rg] = make([]statsEdit, len(meta.RowGroups[rg].Columns))
		}
		edits[rg][col] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read footer statistics: %w", err)
	}
	if err := checkChunkCount(meta, seen); err != nil {
		return nil, err
	}
	return edits, nil
}

// chunkStatsEdit returns what the ColumnMetaData whose fields are md says of its nulls. A field
// repeated in hostile input counts as present if any copy is.
func (b thriftBuf) chunkStatsEdit(md []tfield) (statsEdit, error) {
	e := dropStats
	for _, f := range md {
		if !isStats(f) {
			continue
		}
		e = min(e, dropNullCount)
		_, err := b.skipStruct(f.value, 0, func(f tfield, _ int) (int, error) {
			if isNullCount(f) {
				e = keepStats
			}
			return -1, nil
		})
		if err != nil {
			return 0, err
		}
	}
	return e, nil
}

// stripStats returns the encoded FileMetaData b with, for every column j of row group i where
// edits[i][j] says so, the null_count or the whole statistics field removed (edits[i] nil: row
// group i is left alone). b itself is not modified; without edits it is returned as is.
func stripStats(b []byte, edits [][]statsEdit) ([]byte, error) {
	if !hasEdits(edits) {
		return b, nil
	}
	var ss []splice
	skip := func(rg int) bool { return rg >= len(edits) || edits[rg] == nil }
	err := thriftBuf(b).walkChunkMeta(skip, func(rg, col int, md []tfield) error {
		if col >= len(edits[rg]) || edits[rg][col] == keepStats {
			return nil
		}
		s, err := thriftBuf(b).statsSplices(md, edits[rg][col])
		ss = append(ss, s...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("strip footer statistics: %w", err)
	}
	return applySplices(b, ss), nil
}

// statsSplices returns the splices that apply e to the ColumnMetaData whose fields are md.
func (b thriftBuf) statsSplices(md []tfield, e statsEdit) ([]splice, error) {
	if e == dropStats {
		return dropFields(nil, md, isStats), nil
	}
	var ss []splice
	for _, f := range md {
		if !isStats(f) {
			continue
		}
		stats, _, err := b.walkStruct(f.value, 0, nil)
		if err != nil {
			return nil, err
		}
		ss = dropFields(ss, stats, isNullCount)
	}
	return ss, nil
}

// hasEdits reports whether some chunk has something to leave out.
func hasEdits(edits [][]statsEdit) bool {
	for _, g := range edits {
		for _, e := range g {
			if e != keepStats {
				return true
			}
		}
	}
	return false
}

// encodeOutputFooter returns the complete file tail for meta (as encodeFooter), where the column
// chunks of row group i that edits[i] names claim no statistics, or no null count, that their
// source did not have. The same inputs always give the same bytes.
func encodeOutputFooter(meta *format.FileMetaData, edits [][]statsEdit) ([]byte, error) {
	tail, err := encodeFooter(meta)
	if err != nil || !hasEdits(edits) {
		return tail, err
	}
	body, err := stripStats(tail[:len(tail)-trailerLen], edits)
	if err != nil {
		return nil, fmt.Errorf("encode footer: %w", err)
	}
	body = binary.LittleEndian.AppendUint32(body, uint32(len(body)))
	return append(body, magic...), nil
}

// checkChunkCount fails with ErrCorrupt unless the footer walk decoded
// one set of statistics for every column chunk of meta.
func checkChunkCount(meta *format.FileMetaData, seen int) error {
	want := 0
	for i := range meta.RowGroups {
		want += len(meta.RowGroups[i].Columns)
	}
	if seen != want {
		return fmt.Errorf("%w: footer statistics: %d column chunks, decoded %d", ErrCorrupt, want, seen)
	}
	return nil
}
