// Package checkpoint is the codec of Delta checkpoint files [PROTOCOL.md
// "Checkpoints"]: it decodes the action rows of a Parquet checkpoint part
// or sidecar (ReadActions), typed stats_parsed and partitionValues_parsed
// columns included, and encodes a table state as a checkpoint (Encode) in
// the layout Spark writes. It does no I/O of its own and knows nothing of
// logs, listings or snapshots: it imports only the action types (and
// deltafs's Parquet checks, pqfile). The delta package finds, reads and
// stores the files.
package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/pqfile"
	"github.com/parquet-go/parquet-go"
)

// ReadActions decodes every action row of a checkpoint (classic, one
// part of a multi-part, a UUID-named V2 .parquet checkpoint) or a sidecar
// file, calling fn for each row's action in file order.
//
// Columns are located by path in the file's schema: missing columns read as
// null, unknown ones are ignored, and both the standard and the legacy
// Parquet LIST/MAP layouts are accepted. The actions come out as
// action.Parse would decode the same actions from JSON (an empty map or list
// is non-nil, a null one nil), except that Add.NumRecordsParsed is taken from
// add.stats_parsed.numRecords when the stats JSON does not carry numRecords.
// Rows holding none of the known actions (commitInfo, cdc, ...) are skipped;
// a row holding several is read as the first of add, remove, metaData,
// protocol, txn, domainMetadata, checkpointMetadata, sidecar.
//
// fn owns each *Action it receives. Strings that repeat across rows
// (partition values, map keys, DV storage types) share memory, and equal
// partition values share one *string: treat them as read-only.
//
// A file that cannot be decoded (bad magic or footer, truncated, bad pages,
// wrong column types, an action missing required fields) gives an error
// wrapping action.ErrCorruptLog that names the row group and row where known; the
// reader never panics on bad input. An error returned by r is returned
// wrapped as is (not as ErrCorruptLog), and so is an error returned by fn.
func ReadActions(r io.ReaderAt, size int64, fn func(*action.Action) error) (err error) {
	if size < pqMinFileSize {
		return fmt.Errorf("%w: checkpoint parquet of %d bytes is too short", action.ErrCorruptLog, size)
	}
	src := &errorTrackingReaderAt{r: r, size: size}
	if err := pqfile.CheckFooter(src, size); err != nil {
		if rerr := src.firstError(); rerr != nil {
			return fmt.Errorf("read checkpoint: %w", rerr)
		}
		return fmt.Errorf("%w: checkpoint: %w", action.ErrCorruptLog, err)
	}
	cr := &pqCheckpointReader{fn: fn}
	defer func() {
		if p := recover(); p != nil {
			if cr.inCallback {
				panic(p) // the caller's bug, not a corrupt file
			}
			err = fmt.Errorf("%w: parquet decoder panic: %v", action.ErrCorruptLog, p)
		}
		cr.close()
		if rerr := src.firstError(); rerr != nil && err != nil && !cr.callbackErr {
			err = fmt.Errorf("read checkpoint: %w", rerr)
		}
	}()
	f, err := parquet.OpenFile(src, size,
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(checkpointReadBuffer))
	if err != nil {
		return fmt.Errorf("%w: open checkpoint parquet: %w", action.ErrCorruptLog, err)
	}
	if err := pqfile.CheckPages(src, size, f); err != nil {
		if rerr := src.firstError(); rerr != nil {
			return fmt.Errorf("read checkpoint: %w", rerr)
		}
		return fmt.Errorf("%w: checkpoint: %w", action.ErrCorruptLog, err)
	}
	return cr.read(f)
}

// pqMinFileSize is the size of the smallest Parquet file: magic, footer
// length, magic.
const pqMinFileSize = 12

// checkpointReadBuffer is the read size of each column's page reader: large
// enough that a remote ReaderAt is not hit once per small page.
const checkpointReadBuffer = 64 << 10

// pqCheckpointReader holds the decoding state of one file.
type pqCheckpointReader struct {
	fn          func(*action.Action) error
	actions     []actionCols
	leaves      map[string]*pqLeaf
	rr          pqRowReader
	inCallback  bool // fn is running: a panic is not ours to recover
	callbackErr bool // the error came from fn
}

func (cr *pqCheckpointReader) read(f *parquet.File) error {
	s := newPQResolver(f.Root())
	cr.actions = checkpointColumns(s)
	cr.leaves = s.leaves
	cr.rr.in = newPQInterner()
	for g, rg := range f.RowGroups() {
		if err := cr.readRowGroup(g, rg); err != nil {
			return err
		}
	}
	return nil
}

func (cr *pqCheckpointReader) readRowGroup(g int, rg parquet.RowGroup) error {
	if len(rg.ColumnChunks()) != len(rg.Schema().Columns()) {
		return fmt.Errorf("%w: row group %d: %d column chunks for %d columns",
			action.ErrCorruptLog, g, len(rg.ColumnChunks()), len(rg.Schema().Columns()))
	}
	for _, l := range cr.leaves {
		l.reset(rg)
	}
	n := rg.NumRows()
	for row := int64(0); row < n; row++ {
		a, err := cr.decodeRow(row)
		if err != nil {
			return fmt.Errorf("%w: row group %d, row %d: %w", action.ErrCorruptLog, g, row, err)
		}
		if a == nil {
			continue
		}
		if err := cr.call(a); err != nil {
			return err
		}
	}
	return nil
}

// decodeRow returns the row's action, nil when it holds no known action.
func (cr *pqCheckpointReader) decodeRow(row int64) (*action.Action, error) {
	rr := &cr.rr
	rr.row, rr.err = row, nil
	for _, c := range cr.actions {
		if c.set(rr) {
			a := new(action.Action)
			c.decode(rr, a)
			if rr.err != nil {
				return nil, rr.err
			}
			return a, a.Validate()
		}
	}
	return nil, rr.err
}

func (cr *pqCheckpointReader) call(a *action.Action) error {
	cr.inCallback = true
	err := cr.fn(a)
	cr.inCallback = false
	cr.callbackErr = err != nil
	return err
}

func (cr *pqCheckpointReader) close() {
	for _, l := range cr.leaves {
		l.close()
	}
}

// errorTrackingReaderAt remembers the first error of the underlying reader
// other than io.EOF, so that a storage failure seen through parquet-go is
// reported as such rather than as a corrupt checkpoint. Reads outside the
// file (asked for by offsets of a corrupt footer) fail with io.EOF without
// reaching the reader.
type errorTrackingReaderAt struct {
	r    io.ReaderAt
	size int64
	mu   sync.Mutex
	err  error
}

func (t *errorTrackingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= t.size {
		return 0, io.EOF
	}
	if rest := t.size - off; int64(len(p)) > rest {
		n, err := t.ReadAt(p[:rest], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	n, err := t.r.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.mu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.mu.Unlock()
	}
	return n, err
}

func (t *errorTrackingReaderAt) firstError() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
