package writeback

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// scanLeaf computes a leaf's statistics from its values, for the leaves
// whose footer statistics prove nothing (footerAgg): nulls counted from
// the definition levels, min and max over the non-null values in the
// type's order, NaN noted and left out of the bounds.
func scanLeaf(pq *pqFile, l statLeaf) (leafAgg, error) {
	var agg leafAgg
	bounds := minMaxEligible(l)
	isFloat := l.node.Element.Type.V == format.Float || l.node.Element.Type.V == format.Double
	visit := func(v parquet.Value) {
		if v.IsNull() {
			agg.nulls++
			return
		}
		if !bounds {
			return
		}
		if isFloat && isNaN(v) {
			agg.nan = true
			return
		}
		b := v.Bytes()
		// -0.0 and +0.0 compare equal, so whichever came first would stay:
		// a zero min is -0.0 when the file holds one, a zero max +0.0 when
		// the file holds one (a max of -0.0 is not what the file holds).
		if agg.min == nil || outranks(l, isFloat, b, agg.min, -1) {
			agg.min = bytes.Clone(b)
		}
		if agg.max == nil || outranks(l, isFloat, b, agg.max, 1) {
			agg.max = bytes.Clone(b)
		}
	}
	for i, rg := range pq.pf.RowGroups() {
		if err := eachValue(rg.ColumnChunks()[l.node.Leaf], visit); err != nil {
			return leafAgg{}, fmt.Errorf("row group %d: %w", i, err)
		}
	}
	return agg, nil
}

// outranks reports whether b should replace bound cur: it is beyond it in
// direction dir (-1 for a min, 1 for a max), or for floats a zero of the
// sign that bound wants (-0.0 for a min, +0.0 for a max) over the other.
func outranks(l statLeaf, isFloat bool, b, cur []byte, dir int) bool {
	c := compareBound(l, b, cur)
	if c != 0 {
		return c == dir
	}
	return isFloat && signBit(b) == (dir < 0) && signBit(cur) != (dir < 0)
}

// signBit reports whether a plain-encoded float or double has its sign set.
func signBit(b []byte) bool { return len(b) > 0 && b[len(b)-1]&0x80 != 0 }

func isNaN(v parquet.Value) bool {
	if v.Kind() == parquet.Float {
		return math.IsNaN(float64(v.Float()))
	}
	return math.IsNaN(v.Double())
}

// eachValue calls fn for every value of a column chunk, nulls included,
// turning parquet-go's panics on corrupt pages into errors.
func eachValue(cc parquet.ColumnChunk, fn func(parquet.Value)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decode pages: %v", r)
		}
	}()
	pages := cc.Pages()
	defer pages.Close()
	buf := make([]parquet.Value, 256)
	for {
		pg, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		err = eachPageValue(pg, buf, fn)
		parquet.Release(pg)
		if err != nil {
			return err
		}
	}
}

func eachPageValue(pg parquet.Page, buf []parquet.Value, fn func(parquet.Value)) error {
	r := pg.Values()
	for {
		n, err := r.ReadValues(buf)
		for _, v := range buf[:n] {
			fn(v)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
