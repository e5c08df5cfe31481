package pqfile

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// valueBatch is how many values are decoded per read when filtering a column.
const valueBatch = 4096

// encodedGroup is one re-encoded row group: its footer entry and the bytes of each column chunk.
// Offsets in rg are in the coordinates of chunks, which lie back to back from a positive offset.
type encodedGroup struct {
	data   []byte          // parquet-go: the whole temporary file, chunks index it
	rg     format.RowGroup // the only row group
	chunks []byteRange     // each column chunk's place in rg's coordinates
	parts  [][]piece       // each column chunk's bytes, in order: source ranges or produced bytes
	bufs   []*[]byte       // page filter: the buffers holding produced bytes
}

// reencodeGroup decodes the row group rg (described by src in the footer; root is the file's
// root column), drops the rows at the
// sorted relative indexes in deleted, and encodes the live rows with parquet-go as the only row
// group of an in-memory file with the source schema and the same codec per column. Columns are
// processed in parallel, each straight from its pages to its column writer (no row assembly).
func reencodeGroup(root *parquet.Column, rg parquet.RowGroup, src *format.RowGroup, deleted []uint64) (enc *encodedGroup, err error) {
	defer recoverCorrupt(&err)
	schema, err := writeSchema(root, src)
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(getGroupBuffer(groupSize(src))) // about the input's size: no regrowing
	w := parquet.NewWriter(buf, schema)
	rgw := w.BeginRowGroup()
	dst, chunks := rgw.ColumnWriters(), rg.ColumnChunks()
	if len(dst) != len(chunks) || len(chunks) != len(src.Columns) {
		return nil, fmt.Errorf("%w: %d column writers for %d chunks", ErrUnsupported, len(dst), len(chunks))
	}
	err = forEachParallel(len(chunks), func(j int) error {
		return filterColumnConv(dst[j], chunks[j], deleted, src.NumRows, nil)
	})
	if err != nil {
		return nil, err
	}
	if _, err := rgw.Commit(); err != nil {
		return nil, fmt.Errorf("encode row group: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode row group: %w", err)
	}
	return checkEncoded(buf.Bytes(), src, src.NumRows-int64(len(deleted)))
}

// groupBuffers holds the buffers of re-encoded row groups already written out, so that the next
// group does not allocate (and zero) its buffer again.
var groupBuffers sync.Pool

// getGroupBuffer returns an empty buffer of at least n bytes' capacity.
func getGroupBuffer(n int64) []byte {
	if b, ok := groupBuffers.Get().(*[]byte); ok && int64(cap(*b)) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, n)
}

// release hands the group's buffers back for reuse; enc must not be used afterwards.
func (enc *encodedGroup) release() {
	if enc.data != nil {
		b := enc.data[:0]
		groupBuffers.Put(&b)
	}
	for _, b := range enc.bufs {
		pageBuffers.Put(b)
	}
	*enc = encodedGroup{}
}

// checkEncoded reads back the temporary file's footer and checks that its row group matches the
// source column for column (physical type, codec) with the expected row count.
func checkEncoded(data []byte, src *format.RowGroup, wantRows int64) (*encodedGroup, error) {
	f, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("read back re-encoded row group: %w", err)
	}
	if len(f.meta.RowGroups) != 1 || f.meta.RowGroups[0].NumRows != wantRows {
		return nil, fmt.Errorf("pqfile: re-encoded %d row groups, want 1 of %d rows", len(f.meta.RowGroups), wantRows)
	}
	enc := &encodedGroup{data: data, rg: f.meta.RowGroups[0]}
	for j := range enc.rg.Columns {
		got, want := &enc.rg.Columns[j].MetaData, &src.Columns[j].MetaData
		if got.Type != want.Type || got.Codec != want.Codec {
			return nil, fmt.Errorf("%w: column %q re-encodes as %v/%v, source is %v/%v",
				ErrUnsupported, want.PathInSchema, got.Type, got.Codec, want.Type, want.Codec)
		}
		r, err := chunkRange(&enc.rg.Columns[j], f.start)
		if err != nil {
			return nil, err
		}
		enc.chunks = append(enc.chunks, r)
		enc.parts = append(enc.parts, []piece{{b: data[r.off : r.off+r.n]}})
	}
	return enc, nil
}

// reencodable reports whether parquet-go v0.32.0 decodes and encodes codec faithfully, through
// the bounded decoders of codecs.go (LZ4_RAW only through them: parquet-go's own reader kept a
// stale page buffer when its codec reallocated, parquet-go issue #608). LZ4 (Hadoop framing),
// LZO and unknown codecs it does not support at all.
func reencodable(codec format.CompressionCodec) bool {
	switch codec {
	case format.Uncompressed:
		return true
	case format.Snappy, format.Gzip, format.Brotli, format.Zstd, format.Lz4Raw:
		return codecsBounded
	}
	return false
}

// filterColumnConv copies the values of the live rows of one column chunk to dst, each non-null
// one converted by conv (nil: as they are). A row starts at a value with repetition level 0.
// Only whole rows are handed to dst; the values of a row that continues on the next page are
// cloned, since a page's memory is reused once passed.
func filterColumnConv(dst *parquet.ColumnWriter, chunk parquet.ColumnChunk, deleted []uint64, numRows int64, conv converter) error {
	r := parquet.NewColumnChunkValueReader(chunk)
	defer r.Close()
	buf := make([]parquet.Value, valueBatch)
	var keep []parquet.Value // values of live rows not yet written
	row, next := int64(-1), 0
	live := false
	for {
		n, err := r.ReadValues(buf)
		for _, v := range buf[:n] {
			if v.RepetitionLevel() == 0 {
				row++
				for next < len(deleted) && deleted[next] < uint64(row) {
					next++
				}
				live = next == len(deleted) || deleted[next] != uint64(row)
			} else if row < 0 {
				return fmt.Errorf("%w: column %d starts inside a row", ErrCorrupt, chunk.Column())
			}
			if live {
				if conv != nil && !v.IsNull() {
					var err error
					if v, err = conv(v); err != nil {
						return fmt.Errorf("column %d: %w", chunk.Column(), err)
					}
				} else if conv != nil {
					v = parquet.NullValue().Level(v.RepetitionLevel(), v.DefinitionLevel(), 0)
				}
				keep = append(keep, v)
			}
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%w: decode column %d: %v", ErrCorrupt, chunk.Column(), err)
		}
		var flushErr error
		if keep, flushErr = writeWholeRows(dst, keep, err == io.EOF); flushErr != nil {
			return fmt.Errorf("encode column %d: %w", chunk.Column(), flushErr)
		}
		if err == io.EOF {
			break
		}
	}
	if row+1 != numRows {
		return fmt.Errorf("%w: column %d holds %d rows, row group %d", ErrCorrupt, chunk.Column(), row+1, numRows)
	}
	return nil
}

// writeWholeRows writes the complete rows at the start of keep (all of it when last) and returns
// the cloned values of the trailing incomplete row, reusing keep's storage.
func writeWholeRows(dst *parquet.ColumnWriter, keep []parquet.Value, last bool) ([]parquet.Value, error) {
	end := len(keep)
	if !last {
		for end > 0 && keep[end-1].RepetitionLevel() != 0 {
			end--
		}
		if end > 0 {
			end-- // keep[end] starts the row that may go on
		}
	}
	if end > 0 {
		if _, err := dst.WriteRowValues(keep[:end]); err != nil {
			return nil, err
		}
	}
	rest := copy(keep, keep[end:])
	for i := range keep[:rest] {
		keep[i] = keep[i].Clone()
	}
	return keep[:rest], nil
}

// forEachParallel runs fn(0..n-1) on up to GOMAXPROCS goroutines and returns the first error.
// A panic in fn becomes an ErrCorrupt error.
func forEachParallel(n int, fn func(int) error) error {
	workers := min(n, runtime.GOMAXPROCS(0))
	errs := make([]error, n)
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				errs[j] = func() (err error) {
					defer recoverCorrupt(&err)
					return fn(j)
				}()
			}
		}()
	}
	for j := range n {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// groupSize estimates a row group's encoded size from its footer.
func groupSize(rg *format.RowGroup) int64 {
	n := rg.TotalCompressedSize
	if n <= 0 {
		for _, c := range rg.Columns {
			n += c.MetaData.TotalCompressedSize
		}
	}
	return max(0, min(n, 1<<30)) + 64<<10
}
