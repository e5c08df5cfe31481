package checkpoint

// Reading stats_parsed back: the typed statistics columns of a
// checkpoint turned into the JSON stats string an add carries, with the
// value forms the protocol gives JSON stats (timestamps, decimals).

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// parsedStats reads a checkpoint's add.stats_parsed struct (the stats as
// columns, written when delta.checkpoint.writeStatsAsStruct is on) back into
// the stats JSON of the add [§Checkpoint Schema]. A table whose checkpoints
// hold only stats_parsed (writeStatsAsJson off) would otherwise lose every
// statistic but the row count when its next checkpoint is written from the
// decoded actions.
type parsedStats struct {
	leaves []parsedLeaf
}

// parsedLeaf is one leaf under stats_parsed: its JSON path and how its
// Parquet values become stats JSON values.
type parsedLeaf struct {
	path []string // e.g. minValues, a, b
	leaf *pqLeaf
	conv func(parquet.Value) (any, bool)
}

// newParsedStats finds the leaves of add.stats_parsed, nil when the column
// is absent. Leaves inside lists or maps (none in the protocol's stats)
// and of types the stats JSON has no form for are left out.
func newParsedStats(s pqResolver) *parsedStats {
	c := s.column("stats_parsed")
	if c == nil || c.Leaf() {
		return nil
	}
	ps := &parsedStats{}
	var walk func(c *parquet.Column, path []string)
	walk = func(c *parquet.Column, path []string) {
		if c.MaxRepetitionLevel() > 0 {
			return
		}
		if !c.Leaf() {
			for _, ch := range c.Columns() {
				walk(ch, append(path[:len(path):len(path)], ch.Name()))
			}
			return
		}
		if conv := statsValueConv(c); conv != nil {
			ps.leaves = append(ps.leaves, parsedLeaf{path: path, leaf: s.leafOf(c), conv: conv})
		}
	}
	for _, ch := range c.Columns() {
		walk(ch, []string{ch.Name()})
	}
	return ps
}

// json builds the row's stats JSON, "" when stats_parsed is null. Members
// come in the column order of stats_parsed (Spark's: numRecords,
// minValues, maxValues, nullCount, tightBounds; fields in schema order).
func (ps *parsedStats) json(rr *pqRowReader) string {
	doc := &orderedJSON{}
	for _, l := range ps.leaves {
		v, ok := rr.value(l.leaf)
		if !ok {
			continue
		}
		if jv, ok := l.conv(v); ok {
			doc.set(l.path, jv)
		}
	}
	if len(doc.keys) == 0 || rr.err != nil {
		return ""
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return ""
	}
	return string(b)
}

// orderedJSON is a JSON object that keeps its members in insertion order.
type orderedJSON struct {
	keys []string
	vals map[string]any
}

func (o *orderedJSON) set(path []string, v any) {
	for _, p := range path[:len(path)-1] {
		inner, ok := o.vals[p].(*orderedJSON)
		if !ok {
			inner = &orderedJSON{}
			o.put(p, inner)
		}
		o = inner
	}
	o.put(path[len(path)-1], v)
}

func (o *orderedJSON) put(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// MarshalJSON writes the members in order.
func (o *orderedJSON) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, k := range o.keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, kb...), ':'), vb...)
	}
	return append(b, '}'), nil
}

// statsValueConv returns the conversion of a stats_parsed leaf's values to
// the stats JSON encoding (PROTOCOL.md "Per-file Statistics"): numbers, decimals as
// numbers, dates "2021-09-08", timestamps in milliseconds with a Z offset
// (without one for timestamp_ntz, written as a timestamp not adjusted to
// UTC), strings, booleans. nil for a type the JSON has no form for.
func statsValueConv(c *parquet.Column) func(parquet.Value) (any, bool) {
	t := c.Type()
	var lv any
	if lt := t.LogicalType(); lt != nil {
		lv = lt.Value
	}
	if d, ok := lv.(*format.DecimalType); ok {
		scale := int(d.Scale)
		kind := t.Kind()
		return func(v parquet.Value) (any, bool) { return decimalJSON(kind, v, scale) }
	}
	switch t.Kind() {
	case parquet.Boolean:
		return func(v parquet.Value) (any, bool) { return v.Boolean(), true }
	case parquet.Int32:
		if _, ok := lv.(*format.DateType); ok {
			return func(v parquet.Value) (any, bool) {
				return time.Unix(int64(v.Int32())*86400, 0).UTC().Format("2006-01-02"), true
			}
		}
		return func(v parquet.Value) (any, bool) { return v.Int32(), true }
	case parquet.Int64:
		if ts, ok := lv.(*format.TimestampType); ok {
			return timestampJSON(ts)
		}
		return func(v parquet.Value) (any, bool) { return v.Int64(), true }
	case parquet.Int96:
		return func(v parquet.Value) (any, bool) {
			b := v.Bytes()
			if len(b) != 12 {
				return nil, false
			}
			nanos := int64(binary.LittleEndian.Uint64(b[:8]))
			days := int64(binary.LittleEndian.Uint32(b[8:])) - 2440588
			return formatStatsMillis(days*86_400_000+nanos/1_000_000, true), true
		}
	case parquet.Float, parquet.Double:
		return func(v parquet.Value) (any, bool) {
			f := v.Double()
			if v.Kind() == parquet.Float {
				f = float64(v.Float())
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, false
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
		}
	case parquet.ByteArray:
		return func(v parquet.Value) (any, bool) { return string(v.ByteArray()), true }
	}
	return nil
}

func timestampJSON(ts *format.TimestampType) func(parquet.Value) (any, bool) {
	utc := ts.IsAdjustedToUTC
	per := int64(1000) // micros per ms
	switch ts.Unit.Value.(type) {
	case *format.MilliSeconds:
		per = 1
	case *format.NanoSeconds:
		per = 1_000_000
	}
	return func(v parquet.Value) (any, bool) {
		n := v.Int64()
		ms := n / per
		if n < 0 && n%per != 0 {
			ms-- // floor: a bound stays a bound
		}
		return formatStatsMillis(ms, utc), true
	}
}

func formatStatsMillis(ms int64, utc bool) string {
	t := time.UnixMilli(ms).UTC()
	if utc {
		return t.Format("2006-01-02T15:04:05.000Z07:00")
	}
	return t.Format("2006-01-02T15:04:05.000")
}

// decimalJSON renders a decimal value as a JSON number.
func decimalJSON(kind parquet.Kind, v parquet.Value, scale int) (any, bool) {
	var n *big.Int
	switch kind {
	case parquet.Int32:
		n = big.NewInt(int64(v.Int32()))
	case parquet.Int64:
		n = big.NewInt(v.Int64())
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		if len(b) == 0 {
			return nil, false
		}
		n = new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	default:
		return nil, false
	}
	return json.Number(DecimalText(n, scale)), true
}

// DecimalText renders the decimal unscaled * 10^-scale as plain text
// ("-0.05" for -5 at scale 2), as Delta statistics write decimals.
func DecimalText(n *big.Int, scale int) string {
	s := new(big.Int).Abs(n).String()
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if n.Sign() < 0 {
		s = "-" + s
	}
	return s
}
