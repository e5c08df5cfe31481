package pqfile

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// The page filter serves a partly deleted row group from its encoded pages, without parquet-go:
// in every column chunk, pages with no deleted row are kept byte for byte (as source ranges, so a
// Layout does not even copy them), pages whose rows are all deleted are dropped, and the others
// are decompressed, cut down to their live rows (levels and values, still encoded) and compressed
// again with the same codec. It applies when every column is flat (no repeated field on its path)
// and every page it must decode is a v1 or v2 data page with RLE definition levels and PLAIN or
// dictionary values; anything else, or anything it is unsure of, sends the row group to
// reencodeGroup.

// errNoFastPath marks a row group the page filter does not handle; it is re-encoded with
// parquet-go instead. It never leaves the package.
var errNoFastPath = errors.New("page filter does not apply")

// Test hooks: pageFilterOff sends every row group to parquet-go; reencodeObserver, if set, is
// told how each partly deleted row group was re-encoded (why is nil for the page filter, else the
// reason it did not apply). The observer may be called concurrently.
var (
	pageFilterOff    atomic.Bool
	reencodeObserver atomic.Pointer[func(group int, why error)]
)

// leafInfo is what the page filter needs to know about a flat leaf column.
type leafInfo struct {
	maxDef int // maximum definition level (0: required)
	typ    format.Type
	width  int // bytes per PLAIN value for fixed-width types
}

// flatLeaves returns the leaf columns of schema if every one is flat, else an errNoFastPath error.
func flatLeaves(schema []format.SchemaElement) ([]leafInfo, error) {
	tree, err := BuildSchemaTree(schema)
	if err != nil {
		return nil, err
	}
	leaves := make([]leafInfo, 0, len(tree.Leaves))
	for _, li := range tree.Leaves {
		e := &schema[li]
		if !e.Type.Valid {
			return nil, fmt.Errorf("%w: leaf %q has no type", errNoFastPath, e.Name)
		}
		l := leafInfo{typ: e.Type.V, width: plainWidth(e)}
		for i := li; i > 0; i = tree.Nodes[i].Parent {
			rt := schema[i].RepetitionType
			switch {
			case !rt.Valid || rt.V == format.Repeated || rt.V > format.Repeated:
				return nil, fmt.Errorf("%w: column %q is nested in a repeated field", errNoFastPath, e.Name)
			case rt.V == format.Optional:
				l.maxDef++
			}
		}
		if l.maxDef > 255 || l.width < 0 {
			return nil, fmt.Errorf("%w: column %q (%v, %d levels)", errNoFastPath, e.Name, l.typ, l.maxDef)
		}
		leaves = append(leaves, l)
	}
	return leaves, nil
}

// plainWidth returns the PLAIN width in bytes of a leaf's values: 0 for BOOLEAN and BYTE_ARRAY,
// -1 when unknown.
func plainWidth(e *format.SchemaElement) int {
	switch e.Type.V {
	case format.Boolean, format.ByteArray:
		return 0
	case format.Int32, format.Float:
		return 4
	case format.Int64, format.Double:
		return 8
	case format.Int96:
		return 12
	case format.FixedLenByteArray:
		if e.TypeLength.Valid && e.TypeLength.V > 0 {
			return int(e.TypeLength.V)
		}
	}
	return -1
}

// pageBuffers holds the buffers of filtered column chunks already written out (reencode.go's
// release hands them back). While a file is filtered about three row groups' buffers are alive
// (two being filtered, one being written): 96 MiB lets the next groups of a 256 MiB file of 8
// groups take the released ones instead of new memory, and bounds what an idle mount keeps.
var pageBuffers = &bufList{maxBufs: 32, maxBytes: 96 << 20}

// scratches holds column filters' working buffers, one set per filter running at once (row
// groups in flight times the columns each filters in parallel).
var scratches = freeList[*scratch]{max: 2 * maxGroupWorkers}

// maxScratchBytes bounds the buffers of a scratch kept for reuse: one that a huge page grew is
// left to the garbage collector.
const maxScratchBytes = 16 << 20

// getScratch returns a scratch for one column filter, kept or new.
func getScratch() *scratch {
	if s, ok := scratches.get(); ok {
		return s
	}
	return new(scratch)
}

// putScratch hands s back for reuse unless its buffers are too large.
func putScratch(s *scratch) {
	if s.size() <= maxScratchBytes {
		scratches.put(s)
	}
}

// filterGroup serves row group rg (planned as g) of src with the page filter. It fails with
// errNoFastPath when the filter does not apply, ErrCorrupt on a malformed chunk.
func filterGroup(src io.ReaderAt, rg *format.RowGroup, g *group, leaves []leafInfo) (*encodedGroup, error) {
	if len(rg.Columns) != len(leaves) || len(g.chunks) != len(leaves) {
		return nil, fmt.Errorf("%w: %d column chunks for %d leaves", errNoFastPath, len(rg.Columns), len(leaves))
	}
	outs := make([]chunkOut, len(leaves))
	err := forEachParallel(len(leaves), func(j int) error {
		s := getScratch()
		defer putScratch(s)
		f := &columnFilter{src: src, r: g.chunks[j], leaf: leaves[j], md: &rg.Columns[j].MetaData,
			deleted: g.deleted, rows: rg.NumRows, s: s}
		err := f.run()
		outs[j] = f.out // on error too, so that release hands its buffer back
		return err
	})
	enc := assemble(rg, outs, rg.NumRows-int64(len(g.deleted)))
	if err != nil {
		enc.release()
		return nil, err
	}
	return enc, nil
}

// assemble lays the filtered chunks out back to back from offset len(magic) (as in a file, so no
// offset is 0) and returns them as an encoded row group of live rows, with every footer field
// recomputed or kept only where it stays exact: value, null and size counts, page offsets and
// encoding statistics are recomputed; min/max statistics are kept (still bounds of the values);
// distinct counts, size statistics, page indexes and bloom filters are dropped.
func assemble(src *format.RowGroup, outs []chunkOut, live int64) *encodedGroup {
	enc := &encodedGroup{rg: *src}
	enc.rg.Columns = slices.Clone(src.Columns)
	enc.rg.NumRows, enc.rg.TotalByteSize = live, 0
	pos := int64(len(magic))
	for j := range outs {
		o, c := &outs[j], &enc.rg.Columns[j]
		md := &c.MetaData
		md.NumValues, md.TotalUncompressedSize, md.TotalCompressedSize = o.numValues, o.uncompressed, o.size
		md.DataPageOffset, md.DictionaryPageOffset, md.IndexPageOffset = pos+o.dataOff, 0, 0
		if o.dictOff >= 0 {
			md.DictionaryPageOffset = pos + o.dictOff
		}
		md.Statistics.NullCount, md.Statistics.DistinctCount = o.nulls, 0
		md.SizeStatistics = format.SizeStatistics{}
		if len(md.EncodingStats) > 0 {
			md.EncodingStats = o.encStats
		}
		md.BloomFilterOffset, md.BloomFilterLength = 0, 0
		c.FileOffset = pos
		c.OffsetIndexOffset, c.OffsetIndexLength, c.ColumnIndexOffset, c.ColumnIndexLength = 0, 0, 0, 0
		enc.chunks = append(enc.chunks, byteRange{pos, o.size})
		enc.parts = append(enc.parts, o.parts)
		if o.buf != nil {
			enc.bufs = append(enc.bufs, o.buf)
		}
		enc.rg.TotalByteSize += o.uncompressed
		pos += o.size
	}
	return enc
}

// reencode returns row group i re-encoded without its deleted rows: by the page filter if leaves
// (the flat leaf columns, nil if some column is not flat; why says why) allow it and it applies,
// else by parquet-go from file.
func (p *Plan) reencode(i int, leaves []leafInfo, why error, file *parquet.File) (*encodedGroup, error) {
	src, g := &p.meta.RowGroups[i], &p.groups[i]
	if why == nil && pageFilterOff.Load() {
		why = fmt.Errorf("%w: disabled", errNoFastPath)
	}
	if why == nil {
		enc, err := filterGroup(p.src, src, g, leaves)
		if !errors.Is(err, errNoFastPath) {
			observeReencode(i, nil)
			return enc, err
		}
		why = err
	}
	observeReencode(i, why)
	// parquet-go allocates the sizes page headers declare before reading a page: they are walked
	// and bounded first.
	if err := checkGroupPages(p.src, p.size, src); err != nil {
		return nil, err
	}
	return reencodeGroup(file.Root(), file.RowGroups()[i], src, g.deleted)
}

// observeReencode tells the test observer, if any, how row group i was re-encoded.
func observeReencode(i int, why error) {
	if fn := reencodeObserver.Load(); fn != nil {
		(*fn)(i, why)
	}
}
