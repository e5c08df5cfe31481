package checkpoint

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// pqLeaf streams the values of one leaf column of a checkpoint through a row
// group, row by row, for the checkpoint reader.
//
// Rows are read lazily: a leaf only decodes pages when a row of it is asked
// for, and skips the rows in between (whole pages at a time when it can).
// A leaf of a column that is absent from the file (col == nil) yields one
// null value per row, which is what the protocol says a missing column means.
//
// Invariant: row is the index of the row whose first value is buf[i] (or the
// next value to be read when i == n), unless inRow is set, in which case
// buf[i] is an unconsumed value of row `row` that first or more returned.
type pqLeaf struct {
	name   string          // dotted path, for messages
	col    *parquet.Column // nil: not in the file
	maxRep int

	chunk parquet.ColumnChunk // of the current row group; nil until reset
	pages parquet.Pages       // opened on first use
	page  parquet.Page
	vr    parquet.ValueReader // values of page not yet in buf
	buf   []parquet.Value
	i, n  int
	row   int64
}

const pqLeafBufferValues = 1024

// reset moves the leaf to the start of a row group, releasing what it held.
func (l *pqLeaf) reset(rg parquet.RowGroup) {
	l.close()
	l.row, l.i, l.n = 0, 0, 0
	l.chunk = nil
	if l.col != nil {
		l.chunk = rg.ColumnChunks()[l.col.Index()]
	}
}

// close releases the current page and page reader.
func (l *pqLeaf) close() {
	l.dropPage()
	if l.pages != nil {
		l.pages.Close()
		l.pages = nil
	}
}

func (l *pqLeaf) dropPage() {
	if l.page != nil {
		parquet.Release(l.page)
		l.page, l.vr = nil, nil
	}
}

// first positions the leaf at row r (r must not be before the current row)
// and returns the row's first value without consuming it.
func (l *pqLeaf) first(r int64) (parquet.Value, error) {
	if r == l.row && l.i < l.n {
		return l.buf[l.i], nil
	}
	return l.firstSlow(r)
}

func (l *pqLeaf) firstSlow(r int64) (parquet.Value, error) {
	if l.chunk == nil {
		l.row = r
		return parquet.Value{}, nil
	}
	if err := l.seek(r); err != nil {
		return parquet.Value{}, err
	}
	if err := l.fill(); err != nil {
		return parquet.Value{}, l.eofIsShort(err)
	}
	return l.buf[l.i], nil
}

// value returns the first value of row r and consumes the whole row.
func (l *pqLeaf) value(r int64) (parquet.Value, error) {
	if l.maxRep == 0 && r == l.row && l.i < l.n {
		l.row++
		l.i++
		return l.buf[l.i-1], nil
	}
	v, err := l.firstSlow(r)
	if err != nil || l.chunk == nil {
		l.row = r + 1
		return v, err
	}
	if l.maxRep == 0 {
		l.i++
		l.row++
		return v, nil
	}
	v = v.Clone() // more may release the page v points into
	for {
		_, ok, err := l.more()
		if err != nil || !ok {
			return v, err
		}
	}
}

// more consumes the current value of the row that first returned and
// returns the row's next value, or ok == false (row consumed) at its end.
func (l *pqLeaf) more() (v parquet.Value, ok bool, err error) {
	if l.chunk == nil {
		l.row++
		return v, false, nil
	}
	l.i++
	if err := l.fill(); err != nil {
		if errors.Is(err, io.EOF) {
			l.row++
			return v, false, nil
		}
		return v, false, err
	}
	if v = l.buf[l.i]; v.RepetitionLevel() == 0 {
		l.row++
		return v, false, nil
	}
	return v, true, nil
}

// seek skips rows until the next value is the first one of row r.
func (l *pqLeaf) seek(r int64) error {
	if r < l.row {
		return fmt.Errorf("column %s: row %d read after row %d", l.name, r, l.row)
	}
	if l.maxRep == 0 {
		return l.skipFlat(r - l.row)
	}
	for l.row < r {
		if err := l.fill(); err != nil {
			return l.eofIsShort(err)
		}
		for {
			if _, ok, err := l.more(); err != nil || !ok {
				if err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// skipFlat skips k rows of a non-repeated column (one value per row),
// dropping whole pages without decoding them when it can.
func (l *pqLeaf) skipFlat(k int64) error {
	for k > 0 {
		if l.i < l.n {
			d := min(k, int64(l.n-l.i))
			l.i += int(d)
			l.row += d
			k -= d
			continue
		}
		if l.vr != nil {
			if err := l.readValues(); err != nil {
				return err
			}
			continue
		}
		page, err := l.readPage()
		if err != nil {
			return l.eofIsShort(err)
		}
		if nv := page.NumValues(); nv <= k {
			parquet.Release(page)
			l.row += nv
			k -= nv
			continue
		}
		l.page, l.vr = page, page.Values()
	}
	return nil
}

// fill makes buf[i] valid, reading further values or pages as needed; it
// returns io.EOF at the end of the column chunk.
func (l *pqLeaf) fill() error {
	for l.i >= l.n {
		if l.vr == nil {
			page, err := l.readPage()
			if err != nil {
				return err
			}
			l.page, l.vr = page, page.Values()
		}
		if err := l.readValues(); err != nil {
			return err
		}
	}
	return nil
}

// readValues refills buf from the current page, dropping the page once it
// has no more values.
func (l *pqLeaf) readValues() error {
	if l.buf == nil {
		l.buf = make([]parquet.Value, pqLeafBufferValues)
	}
	n, err := l.vr.ReadValues(l.buf)
	l.i, l.n = 0, n
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("column %s: %w", l.name, err)
	}
	if n == 0 {
		l.dropPage()
	}
	return nil
}

// readPage returns the next page of the chunk (io.EOF after the last one),
// releasing the previous one: its values must all have been consumed.
func (l *pqLeaf) readPage() (parquet.Page, error) {
	l.dropPage()
	if l.pages == nil {
		l.pages = l.chunk.Pages()
	}
	page, err := l.pages.ReadPage()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("column %s: %w", l.name, err)
	}
	return page, err
}

// eofIsShort turns the end of a column chunk met in the middle of the row
// group into an error: the column has fewer values than the row group rows.
func (l *pqLeaf) eofIsShort(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("column %s: fewer values than rows (at row %d)", l.name, l.row)
	}
	return err
}
