package writeback

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

// proof is what decoding every page of a file (pqfile.Prove) established:
// the statistics the commit writes come from here, never from the
// footer's claims.
type proof struct {
	rows int64
	// aggs[i] is statistics leaf i's over the file, byGroup[rg][i] per row
	// group (to hold the footer's statistics against the values).
	aggs    []leafAgg
	byGroup [][]leafAgg
}

// proveFile decodes every page of pq within the committer's validation
// budget: it refuses the file at the first page that does not decode, a
// null in a column the table says is NOT NULL, and footer statistics the
// values contradict (readers skipping row groups by them would miss
// rows); it returns the values' statistics for sc.leaves.
func (c *Committer) proveFile(ctx context.Context, pq *pqFile, sc *schemaCheck, display string) (*proof, error) {
	byLeaf := map[int][]int{} // column index -> statistics leaves on it
	for i, l := range sc.leaves {
		byLeaf[l.node.Leaf] = append(byLeaf[l.node.Leaf], i)
	}
	nonNull := map[int][]nonNullNode{}
	for _, nn := range sc.nonNull {
		k := nn.node.FirstLeaf().Leaf
		nonNull[k] = append(nonNull[k], nn)
	}
	pr := &proof{aggs: make([]leafAgg, len(sc.leaves)), byGroup: make([][]leafAgg, len(pq.meta.RowGroups))}
	for i := range pr.byGroup {
		pr.byGroup[i] = make([]leafAgg, len(sc.leaves))
	}
	var refusalMu sync.Mutex
	var refusal error // guarded by refusalMu: the visitor runs on several columns at once
	visit := func(p *pqfile.ProvedPage) error {
		for _, nn := range nonNull[p.Leaf] {
			for _, d := range p.Def {
				if nn.nullAt(int(d)) {
					err := invalidf("%s: column %s is not nullable in the table but holds nulls (row group %d)%s", display, nn.path, p.RowGroup, nn.why)
					refusalMu.Lock()
					if refusal == nil {
						refusal = err
					}
					refusalMu.Unlock()
					return err
				}
			}
		}
		for _, i := range byLeaf[p.Leaf] {
			pr.byGroup[p.RowGroup][i].addPage(sc.leaves[i], p)
		}
		return nil
	}
	rows, err := pqfile.Prove(ctx, pq.f, pq.size, pq.meta, pqfile.ProveOptions{Budget: c.budget}, visit)
	refusalMu.Lock()
	defer refusalMu.Unlock()
	if refusal != nil {
		return nil, refusal
	}
	if err != nil {
		var pe *pqfile.ProveError
		if errors.As(err, &pe) || errors.Is(err, pqfile.ErrCorrupt) || errors.Is(err, pqfile.ErrLimit) || errors.Is(err, pqfile.ErrUnsupported) {
			return nil, invalidf("%s: %v", display, err)
		}
		return nil, fmt.Errorf("%s: decode pages: %w", display, err)
	}
	pr.rows = rows
	for i, l := range sc.leaves {
		for rg := range pr.byGroup {
			g := &pr.byGroup[rg][i]
			if err := checkFooterClaims(pq, l, rg, g); err != nil {
				return nil, invalidf("%s: column %s row group %d: %v", display, dotted(l.logical), rg, err)
			}
			pr.aggs[i].merge(l, g)
		}
	}
	return pr, nil
}

// addPage folds a decoded page into the aggregate: nulls from the
// definition levels, bounds over the present values in the type's order
// (NaN noted and left out).
func (a *leafAgg) addPage(l statLeaf, p *pqfile.ProvedPage) {
	for _, d := range p.Def {
		if int(d) < p.MaxDef {
			a.nulls++
		}
	}
	if !minMaxEligible(l) {
		return
	}
	t := l.node.Element.Type.V
	if raw, w, ok := p.Fixed(); ok && (t == format.Int32 || t == format.Int64) && len(raw) > 0 {
		a.addInts(l, raw, w)
		return
	}
	isFloat := t == format.Float || t == format.Double
	if raw, w, ok := p.Fixed(); ok && isFloat && len(raw) > 0 {
		a.addFloats(l, raw, w)
		return
	}
	if _, dec := l.typ.(delta.DecimalType); t == format.ByteArray && !dec {
		// bytes.Compare is compareBound's order here: bound the page with
		// its own values (they live as long as the page), copy two.
		var lo, hi []byte
		p.Distinct(func(b []byte) {
			if lo == nil || bytes.Compare(b, lo) < 0 {
				lo = b
			}
			if hi == nil || bytes.Compare(b, hi) > 0 {
				hi = b
			}
		})
		if lo != nil {
			a.add(l, false, lo)
			a.add(l, false, hi)
		}
		return
	}
	p.Distinct(func(b []byte) { a.add(l, isFloat, b) })
}

// addFloats folds plain little-endian floats (w 4) or doubles (w 8) in
// one typed pass: NaN noted and left out, a zero min -0.0 and a zero max
// +0.0 when the page holds them (add's rules).
func (a *leafAgg) addFloats(l statLeaf, raw []byte, w int) {
	at := func(i int) float64 {
		if w == 4 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(raw[i:]))
	}
	lo, hi, any := 0.0, 0.0, false
	for i := 0; i < len(raw); i += w {
		v := at(i)
		switch {
		case v != v:
			a.nan = true
		case !any:
			lo, hi, any = v, v, true
		default:
			if v < lo || (v == lo && math.Signbit(v) && !math.Signbit(lo)) {
				lo = v
			}
			if v > hi || (v == hi && !math.Signbit(v) && math.Signbit(hi)) {
				hi = v
			}
		}
	}
	if !any {
		return
	}
	put := func(v float64) []byte {
		if w == 4 {
			return binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(v)))
		}
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
	}
	a.add(l, true, put(lo))
	a.add(l, true, put(hi))
}

// addInts folds plain little-endian signed integers of width 4 or 8
// (compareBound's order for INT32 and INT64, decimals included) in one
// typed pass.
func (a *leafAgg) addInts(l statLeaf, raw []byte, w int) {
	lo, hi := intAt(raw, w, 0), intAt(raw, w, 0)
	for i := w; i < len(raw); i += w {
		v := intAt(raw, w, i)
		lo, hi = min(lo, v), max(hi, v)
	}
	var b [8]byte
	put := func(v int64) []byte {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		return b[:w]
	}
	a.add(l, false, put(lo))
	a.add(l, false, put(hi))
}

func intAt(raw []byte, w, i int) int64 {
	if w == 4 {
		return int64(int32(binary.LittleEndian.Uint32(raw[i:])))
	}
	return int64(binary.LittleEndian.Uint64(raw[i:]))
}

func (a *leafAgg) add(l statLeaf, isFloat bool, b []byte) {
	if isFloat && nanBytes(b) {
		a.nan = true
		return
	}
	// -0.0 and +0.0 compare equal, so whichever came first would stay: a
	// zero min is -0.0 when the file holds one, a zero max +0.0 when the
	// file holds one.
	if a.min == nil || outranks(l, isFloat, b, a.min, -1) {
		a.min = setBytes(a.min, b)
	}
	if a.max == nil || outranks(l, isFloat, b, a.max, 1) {
		a.max = setBytes(a.max, b)
	}
}

// setBytes copies b into dst's storage; the result is never nil (an
// empty string is a bound).
func setBytes(dst, b []byte) []byte {
	if dst == nil {
		return append(make([]byte, 0, len(b)), b...)
	}
	return append(dst[:0], b...)
}

// merge folds a row group's aggregate into a's.
func (a *leafAgg) merge(l statLeaf, g *leafAgg) {
	a.nulls += g.nulls
	a.nan = a.nan || g.nan
	if g.min == nil {
		return
	}
	isFloat := l.node.Element.Type.V == format.Float || l.node.Element.Type.V == format.Double
	if a.min == nil || outranks(l, isFloat, g.min, a.min, -1) {
		a.min = g.min
	}
	if a.max == nil || outranks(l, isFloat, g.max, a.max, 1) {
		a.max = g.max
	}
}

func nanBytes(b []byte) bool {
	switch len(b) {
	case 4:
		return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case 8:
		return math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	return false
}

// checkFooterClaims holds the footer statistics of one chunk against its
// decoded values: a null_count the footer states must be the nulls'
// count, and min_value/max_value (in a type-defined order, for types
// whose order deltafs compares exactly: integers, dates, timestamps,
// strings) must bound the values, truncated or not. Readers (DuckDB,
// Spark) skip row groups by these, so a file whose footer lies would
// answer queries wrongly even with honest Delta statistics.
func checkFooterClaims(pq *pqFile, l statLeaf, rg int, g *leafAgg) error {
	col := l.node.Leaf
	if col >= len(pq.meta.RowGroups[rg].Columns) {
		return nil
	}
	s := &pq.meta.RowGroups[rg].Columns[col].MetaData.Statistics
	if pq.chunkStats[rg][col].NullCount && s.NullCount != g.nulls {
		return fmt.Errorf("the footer says %d nulls, the pages hold %d", s.NullCount, g.nulls)
	}
	if g.min == nil || !footerOrderExact(pq, l) {
		return nil
	}
	if s.MinValue != nil && compareBound(l, s.MinValue, g.min) > 0 {
		return fmt.Errorf("the footer's min_value is above the smallest value")
	}
	if s.MaxValue != nil && compareBound(l, s.MaxValue, g.max) < 0 {
		return fmt.Errorf("the footer's max_value is below the largest value")
	}
	return nil
}

// footerOrderExact: the leaf's footer bounds are in the order compareBound
// implements (signed integers, unsigned bytes) and of its width.
func footerOrderExact(pq *pqFile, l statLeaf) bool {
	if l.node.Leaf >= len(pq.meta.ColumnOrders) {
		return false
	}
	if _, typed := pq.meta.ColumnOrders[l.node.Leaf].Value.(*format.TypeDefinedOrder); !typed {
		return false
	}
	if _, dec := l.typ.(delta.DecimalType); dec {
		return false
	}
	switch l.node.Element.Type.V {
	case format.Int32, format.Int64:
		return !unsignedLeaf(l)
	case format.ByteArray:
		return l.typ.String() == "string"
	}
	return false
}

// unsignedLeaf: an integer leaf annotated unsigned (its footer order is
// unsigned, compareBound's signed).
func unsignedLeaf(l statLeaf) bool {
	el := l.node.Element
	if it, ok := el.LogicalType.Value.(*format.IntType); ok && el.LogicalType.Value != nil {
		return !it.IsSigned
	}
	return false
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
