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
		if agg.min == nil || compareBound(l, b, agg.min) < 0 {
			agg.min = bytes.Clone(b)
		}
		if agg.max == nil || compareBound(l, b, agg.max) > 0 {
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
