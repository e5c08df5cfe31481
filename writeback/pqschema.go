package writeback

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/pqfile"
)

// pqFile is an opened local Parquet file: its parquet-go view (for
// scanning definition levels) and the schema tree of its footer.
type pqFile struct {
	f    *os.File
	size int64
	pf   *parquet.File
	meta *format.FileMetaData
	root *pqfile.SchemaNode
	// chunkStats[rg][col]: what the chunk's footer statistics state beyond
	// their decoded values (an absent null_count decodes as 0 and proves
	// nothing; inexact bounds are only bounds).
	chunkStats [][]pqfile.ChunkStats
}

// openParquet opens and checks a local Parquet file: magic, footer and
// schema tree. Every defect of the file is an error wrapping
// ErrInvalidFile; the caller must close the result.
func openParquet(path, display string) (p *pqFile, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", display, err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", display, err)
	}
	if err := checkMagic(f, fi.Size()); err != nil {
		return nil, invalidf("%s: %v", display, err)
	}
	pf, err := openFooter(f, fi.Size())
	if err == nil {
		err = pqfile.CheckPages(f, fi.Size(), pf)
	}
	if err == nil {
		err = checkPageIndex(f, fi.Size(), pf.Metadata())
	}
	if err != nil {
		return nil, invalidf("%s: not a readable Parquet file: %v", display, err)
	}
	root, err := schemaTree(pf.Metadata().Schema)
	if err != nil {
		return nil, invalidf("%s: bad Parquet schema: %v", display, err)
	}
	known, err := footerChunkStats(f, fi.Size(), pf.Metadata())
	if err != nil {
		return nil, invalidf("%s: not a readable Parquet file: %v", display, err)
	}
	return &pqFile{f: f, size: fi.Size(), pf: pf, meta: pf.Metadata(), root: root, chunkStats: known}, nil
}

// footerChunkStats reads the encoded footer (its length was checked by
// pqfile.CheckFooter) for what each chunk's statistics state.
func footerChunkStats(r io.ReaderAt, size int64, meta *format.FileMetaData) ([][]pqfile.ChunkStats, error) {
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, err
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	footer := make([]byte, n)
	if _, err := r.ReadAt(footer, size-8-n); err != nil {
		return nil, err
	}
	return pqfile.FooterChunkStats(footer, meta)
}

func (p *pqFile) Close() error { return p.f.Close() }

// checkMagic gives the precise reason a file is not Parquet before the
// footer parser gives a vaguer one.
func checkMagic(r io.ReaderAt, size int64) error {
	if size == 0 {
		return fmt.Errorf("empty file, not Parquet")
	}
	if size < 12 {
		return fmt.Errorf("%d bytes is too small for a Parquet file", size)
	}
	var head, tail [4]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return err
	}
	if _, err := r.ReadAt(tail[:], size-4); err != nil {
		return err
	}
	if string(head[:]) != "PAR1" {
		return fmt.Errorf("not a Parquet file (no PAR1 magic at the start)")
	}
	if string(tail[:]) != "PAR1" {
		return fmt.Errorf("truncated or not a Parquet file (no PAR1 magic at the end)")
	}
	return nil
}

// openFooter parses the footer with parquet-go, turning its panics on
// hostile input into errors.
func openFooter(r io.ReaderAt, size int64) (pf *parquet.File, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("decode footer: %v", rec)
		}
	}()
	if err := pqfile.CheckFooter(r, size); err != nil {
		return nil, err
	}
	return parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
}

// checkPageIndex decodes the file's column and offset indexes, which the
// validation skips but readers use (parquet-go by default, engines that
// filter pages): a file whose page index does not decode would be
// committed and then fail those readers. Each index must lie in the file
// before it is read, so that a hostile length allocates nothing.
func checkPageIndex(r io.ReaderAt, size int64, meta *format.FileMetaData) (err error) {
	within := func(off int64, n int32) bool { return off >= 0 && n >= 0 && off <= size && int64(n) <= size-off }
	for i := range meta.RowGroups {
		for j := range meta.RowGroups[i].Columns {
			cc := &meta.RowGroups[i].Columns[j]
			if !within(cc.ColumnIndexOffset, cc.ColumnIndexLength) || !within(cc.OffsetIndexOffset, cc.OffsetIndexLength) {
				return fmt.Errorf("row group %d column %d: page index outside the file", i, j)
			}
		}
	}
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("decode page index: %v", rec)
		}
	}()
	_, err = parquet.OpenFile(r, size, parquet.SkipBloomFilters(true))
	return err
}

// schemaTree builds the schema tree of a footer and checks that every
// leaf has a physical type.
func schemaTree(schema []format.SchemaElement) (*pqfile.SchemaNode, error) {
	t, err := pqfile.BuildSchemaTree(schema)
	if err != nil {
		return nil, err
	}
	if len(t.Leaves) == 0 {
		return nil, fmt.Errorf("the schema has no columns")
	}
	for _, i := range t.Leaves {
		if !schema[i].Type.Valid {
			return nil, fmt.Errorf("element %q has neither children nor a type", schema[i].Name)
		}
	}
	return t.Root(), nil
}
