package pqfile

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go/format"
)

// pageData is a data page of a flat column decoded down to its definition levels and its
// (uncompressed, still encoded) values section.
type pageData struct {
	n       int     // values, one per row
	nonNull int     // values whose level is the maximum: those present in values
	levels  []uint8 // nil in a required column
	values  []byte
	enc     format.Encoding
}

// run is a half-open range [lo, hi) of the non-null values of a page.
type run struct{ lo, hi int }

// scratch holds the buffers one column filter reuses from page to page (and, through
// scratches, the next filters).
type scratch struct {
	win, raw, page, lv, vals, hdrOut []byte
	levels, keep                     []uint8
	idx, keepIdx                     []int32
	offs                             []int
	runs                             []run
	pd                               pageData
}

// size returns about how many bytes the scratch's buffers hold.
func (s *scratch) size() int {
	n := cap(s.win) + cap(s.raw) + cap(s.page) + cap(s.lv) + cap(s.vals) + cap(s.hdrOut)
	n += cap(s.levels) + cap(s.keep) + 4*(cap(s.idx)+cap(s.keepIdx))
	return n + 8*cap(s.offs) + 16*cap(s.runs)
}

// filterPage decodes a data page holding some deleted rows (dels, file rows relative to the row
// group; the page starts at row first) and appends it without them.
func (f *columnFilter) filterPage(off, hl int64, h *format.PageHeader, dels []uint64, first uint64) error {
	n, _, err := f.pageCounts(off, h)
	if err != nil {
		return err
	}
	pd, err := f.loadPage(off, hl, h, int(n), true)
	if err != nil {
		return err
	}
	runs, levels, nonNull := liveRuns(f.s, pd, uint8(f.leaf.maxDef), dels, first)
	kept := pd.n - len(dels)
	return f.writePage(off, h, &liveRows{pd, runs, levels, kept, nonNull})
}

// loadPage reads the data page of n values whose header h (hl bytes) is at chunk offset off,
// decompresses it and decodes its definition levels. With verify, a page whose recorded CRC does
// not match its bytes is corrupt (parquet-go refuses it too).
func (f *columnFilter) loadPage(off, hl int64, h *format.PageHeader, n int, verify bool) (*pageData, error) {
	body, err := f.bytesAt(off+hl, int64(h.CompressedPageSize))
	if err != nil {
		return nil, err
	}
	if verify && h.CRC != 0 && pageCRC(body) != h.CRC {
		return nil, f.corrupt(off, "page CRC does not match its bytes")
	}
	pd := &f.s.pd
	*pd = pageData{n: n}
	var lv []byte
	if h.Type == format.DataPage {
		lv, err = f.splitV1(off, h, body, pd)
	} else {
		lv, err = f.splitV2(off, h, body, pd)
	}
	if err != nil {
		return nil, err
	}
	if err := f.decodeLevels(off, lv, pd); err != nil {
		return nil, err
	}
	if h.Type == format.DataPageV2 && int(h.DataPageHeaderV2.V.NumNulls) != n-pd.nonNull {
		return nil, f.corrupt(off, "header says %d nulls, levels %d", h.DataPageHeaderV2.V.NumNulls, n-pd.nonNull)
	}
	return pd, nil
}

// splitV1 decompresses a v1 page body and returns its definition levels section, setting the
// values section and encoding of pd.
func (f *columnFilter) splitV1(off int64, h *format.PageHeader, body []byte, pd *pageData) ([]byte, error) {
	v := &h.DataPageHeader.V
	raw, err := f.decompress(off, body, int(h.UncompressedPageSize))
	if err != nil {
		return nil, err
	}
	pd.enc, pd.values = v.Encoding, raw
	if f.leaf.maxDef == 0 {
		return nil, nil
	}
	if v.DefinitionLevelEncoding != format.RLE {
		return nil, f.unsupported("%v definition levels", v.DefinitionLevelEncoding)
	}
	if len(raw) < 4 || int64(binary.LittleEndian.Uint32(raw)) > int64(len(raw)-4) {
		return nil, f.corrupt(off, "definition levels overrun the page")
	}
	k := 4 + int(binary.LittleEndian.Uint32(raw))
	pd.values = raw[k:]
	return raw[4:k], nil
}

// splitV2 returns the (never compressed) definition levels section of a v2 page body and sets
// the decompressed values section and encoding of pd.
func (f *columnFilter) splitV2(off int64, h *format.PageHeader, body []byte, pd *pageData) ([]byte, error) {
	v := &h.DataPageHeaderV2.V
	k := int(v.DefinitionLevelsByteLength)
	if k > len(body) || k > int(h.UncompressedPageSize) {
		return nil, f.corrupt(off, "definition levels of %d bytes overrun the page", k)
	}
	vals, size := body[k:], int(h.UncompressedPageSize)-k
	if !v.IsCompressed.Valid || v.IsCompressed.V {
		var err error
		if vals, err = f.decompress(off, vals, size); err != nil {
			return nil, err
		}
	} else if len(vals) != size {
		return nil, f.corrupt(off, "%d value bytes, header says %d", len(vals), size)
	}
	pd.enc, pd.values = v.Encoding, vals
	return body[:k], nil
}

// decodeLevels decodes pd.n definition levels from lv (none in a required column) and counts the
// non-null values.
func (f *columnFilter) decodeLevels(off int64, lv []byte, pd *pageData) error {
	if f.leaf.maxDef == 0 {
		pd.nonNull = pd.n
		return nil
	}
	levels, err := decodeHybrid(f.s.levels[:0], lv, levelWidth(f.leaf.maxDef), pd.n)
	f.s.levels = levels
	if err != nil {
		return f.corrupt(off, "definition levels: %v", err)
	}
	maxDef := uint8(f.leaf.maxDef)
	for _, l := range levels {
		if l > maxDef {
			return f.corrupt(off, "definition level %d above %d", l, maxDef)
		}
		if l == maxDef {
			pd.nonNull++
		}
	}
	pd.levels = levels
	return nil
}

// decompress returns src decompressed with the chunk's codec; it must be size bytes.
func (f *columnFilter) decompress(off int64, src []byte, size int) ([]byte, error) {
	buf := grow(f.s.raw, size)
	out, err := decompress(f.md.Codec, src, buf)
	if err != nil {
		return nil, fmt.Errorf("column %q: page at byte %d of its chunk: %v page of %d bytes declared: %w",
			strings.Join(f.md.PathInSchema, "."), off, f.md.Codec, size, err)
	}
	if f.md.Codec != format.Uncompressed {
		f.s.raw = out
	}
	return out, nil
}

// liveRuns returns the runs of the non-null values of the page's live rows, the levels of its live
// rows (nil in a required column) and the number of their non-null values. dels are the page's
// deleted rows, relative to the row group; the page starts at row first.
func liveRuns(s *scratch, pd *pageData, maxDef uint8, dels []uint64, first uint64) ([]run, []uint8, int) {
	runs := s.runs[:0]
	defer func() { s.runs = runs }()
	if pd.levels == nil {
		prev := 0
		for _, d := range dels {
			if i := int(d - first); i > prev {
				runs = append(runs, run{prev, i})
			}
			prev = int(d-first) + 1
		}
		if prev < pd.n {
			runs = append(runs, run{prev, pd.n})
		}
		return runs, nil, pd.n - len(dels)
	}
	keep := s.keep[:0]
	vi, k, nonNull := 0, 0, 0
	for i, l := range pd.levels {
		if k < len(dels) && int(dels[k]-first) == i {
			k++
			if l == maxDef {
				vi++
			}
			continue
		}
		keep = append(keep, l)
		if l != maxDef {
			continue
		}
		if m := len(runs) - 1; m >= 0 && runs[m].hi == vi {
			runs[m].hi++
		} else {
			runs = append(runs, run{vi, vi + 1})
		}
		vi++
		nonNull++
	}
	s.keep = keep
	return runs, keep, nonNull
}
