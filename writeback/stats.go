package writeback

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/checkpoint"
)

// Table properties that choose the statistics columns [PROTOCOL.md "Per-file Statistics"].
const (
	configStatsColumns  = "delta.dataSkippingStatsColumns"
	configNumIndexed    = "delta.dataSkippingNumIndexedCols"
	configStringPrefix  = "delta.dataSkippingStringPrefixLength"
	defaultNumIndexed   = 32
	defaultStringPrefix = 32
)

// fileStats is the add.stats JSON document. Min/max/nullCount mirror the
// nested schema with physical names; a column whose footer statistics are
// missing or unusable is left out (statistics are optional per column).
type fileStats struct {
	NumRecords int64          `json:"numRecords"`
	MinValues  map[string]any `json:"minValues,omitempty"`
	MaxValues  map[string]any `json:"maxValues,omitempty"`
	NullCount  map[string]any `json:"nullCount,omitempty"`
}

// statSelection is which leaves get statistics: selected by the table's
// statistics properties, plus the clustering columns, which must have
// statistics in every add [§Clustered Table]. Both are keyed by the
// lower-cased dotted logical path; clustering holds the physical path.
type statSelection struct {
	selected   func(logical []string) bool
	clustering map[string][]string
}

// buildStats computes the statistics of a validated file: numRecords
// always; nullCount, min and max for the selected leaves, each only where
// it is exact (timestamps truncated to milliseconds and strings to
// prefixLen characters as the protocol says). The footer is used where it
// proves a leaf's statistics (footerAgg); other leaves are computed from
// their values. A clustering column whose bounds cannot be written
// refuses the file.
func buildStats(pr *proof, leaves []statLeaf, sel statSelection, prefixLen int, display string) (string, error) {
	st := fileStats{NumRecords: pr.rows, MinValues: map[string]any{}, MaxValues: map[string]any{}, NullCount: map[string]any{}}
	seen := map[string]bool{}
	for i, l := range leaves {
		key := strings.ToLower(dotted(l.logical))
		_, clustering := sel.clustering[key]
		if !sel.selected(l.logical) && !clustering {
			continue
		}
		seen[key] = true
		agg := pr.aggs[i]
		setPath(st.NullCount, l.physical, agg.nulls)
		if !minMaxEligible(l) || agg.min == nil {
			continue // no bounds for the type, or all null
		}
		lo, hi, ok := encodeBounds(l, agg.min, agg.max, prefixLen)
		if ok && !agg.nan {
			setPath(st.MinValues, l.physical, lo)
			setPath(st.MaxValues, l.physical, hi)
		} else if clustering {
			return "", invalidf("%s: clustering column %s needs statistics, but its values have no exact bounds in the statistics format (NaN, infinity, invalid UTF-8 or an untruncatable string)",
				display, dotted(l.logical))
		}
	}
	for key, phys := range sel.clustering {
		if !seen[key] { // a nullable column missing from the file: all null
			setPath(st.NullCount, phys, pr.rows)
		}
	}
	b, _ := json.Marshal(st) // maps of strings, numbers and json.Number only
	return string(b), nil
}

// leafAgg is a leaf's statistics over all row groups. Invariant: min and
// max are nil together (no non-null value, or a type without bounds).
type leafAgg struct {
	nulls    int64
	min, max []byte // Parquet plain-encoded bounds
	nan      bool   // a float or double NaN was seen (min and max exclude it)
}

// minMaxEligible: Spark collects min/max for numeric, date, timestamp and
// string columns, not for boolean and binary; INT96 has no usable order.
func minMaxEligible(l statLeaf) bool {
	if _, ok := l.typ.(delta.DecimalType); ok {
		return true
	}
	p, ok := l.typ.(delta.PrimitiveType)
	if !ok || l.node.Element.Type.V == format.Int96 {
		return false
	}
	switch p.Name {
	case "byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string":
		return true
	}
	return false
}

// compareBound orders two plain-encoded values of the leaf's type.
func compareBound(l statLeaf, a, b []byte) int {
	switch l.node.Element.Type.V {
	case format.Int32:
		return cmp.Compare(int64(int32(le32(a))), int64(int32(le32(b))))
	case format.Int64:
		return cmp.Compare(int64(le64(a)), int64(le64(b)))
	case format.Float:
		return cmp.Compare(float64(math.Float32frombits(le32(a))), float64(math.Float32frombits(le32(b))))
	case format.Double:
		return cmp.Compare(math.Float64frombits(le64(a)), math.Float64frombits(le64(b)))
	}
	if _, ok := l.typ.(delta.DecimalType); ok {
		return bigOf(a).Cmp(bigOf(b))
	}
	return bytes.Compare(a, b)
}

func le32(b []byte) uint32 {
	if len(b) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func le64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// bigOf decodes a big-endian two's complement integer (decimal bytes).
func bigOf(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}

// encodeBounds turns the footer bounds into stats JSON values; ok is false
// when they cannot be expressed (NaN, invalid UTF-8, bad widths, a max
// string that cannot be truncated).
func encodeBounds(l statLeaf, lo, hi []byte, prefixLen int) (any, any, bool) {
	a, ok1 := encodeValue(l, lo, false, prefixLen)
	b, ok2 := encodeValue(l, hi, true, prefixLen)
	return a, b, ok1 && ok2
}

func encodeValue(l statLeaf, v []byte, isMax bool, prefixLen int) (any, bool) {
	el := l.node.Element
	if d, ok := l.typ.(delta.DecimalType); ok {
		n := decimalUnscaled(el.Type.V, v)
		if n == nil {
			return nil, false
		}
		return json.Number(checkpoint.DecimalText(n, d.Scale)), true
	}
	switch el.Type.V {
	case format.Int32:
		if len(v) != 4 {
			return nil, false
		}
		return encodeInt(l, int64(int32(le32(v))))
	case format.Int64:
		if len(v) != 8 {
			return nil, false
		}
		return encodeInt(l, int64(le64(v)))
	case format.Float, format.Double:
		return encodeFloat(el.Type.V, v)
	case format.ByteArray:
		if !utf8.Valid(v) {
			return nil, false
		}
		if isMax {
			return truncateMax(string(v), prefixLen)
		}
		return truncateMin(string(v), prefixLen), true
	}
	return nil, false
}

func encodeInt(l statLeaf, n int64) (any, bool) {
	switch l.typ.String() {
	case "date":
		return time.Unix(n*86400, 0).UTC().Format("2006-01-02"), true
	case "timestamp", "timestamp_ntz":
		ms := n / 1000
		if tsMillis(l.node.Element) {
			ms = n
		} else if n < 0 && n%1000 != 0 {
			ms-- // floor, so that the bound stays a bound
		}
		t := time.UnixMilli(ms).UTC()
		if l.typ.String() == "timestamp" {
			return t.Format("2006-01-02T15:04:05.000Z07:00"), true
		}
		return t.Format("2006-01-02T15:04:05.000"), true
	}
	return n, true
}

func encodeFloat(t format.Type, v []byte) (any, bool) {
	var f float64
	bits := 64
	if t == format.Float {
		if len(v) != 4 {
			return nil, false
		}
		f, bits = float64(math.Float32frombits(le32(v))), 32
	} else {
		if len(v) != 8 {
			return nil, false
		}
		f = math.Float64frombits(le64(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) { // no exact JSON number for them
		return nil, false
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits)), true
}

// decimalUnscaled decodes a decimal bound by physical type.
func decimalUnscaled(t format.Type, v []byte) *big.Int {
	switch t {
	case format.Int32:
		if len(v) != 4 {
			return nil
		}
		return big.NewInt(int64(int32(le32(v))))
	case format.Int64:
		if len(v) != 8 {
			return nil
		}
		return big.NewInt(int64(le64(v)))
	case format.ByteArray, format.FixedLenByteArray:
		if len(v) == 0 {
			return nil
		}
		return bigOf(v)
	}
	return nil
}

// truncateMin returns the first prefixLen characters (Spark: a prefix is
// a lower bound).
func truncateMin(s string, prefixLen int) string {
	r := []rune(s)
	if len(r) <= prefixLen {
		return s
	}
	return string(r[:prefixLen])
}

// truncateMax is Spark's truncateMaxStringAgg: the prefix plus a
// tie-breaker above every continuation (U+007F when the next character is
// below it, else U+10FFFF), growing the prefix up to twice its length
// while the next character is U+10FFFF itself; ok false when it cannot.
func truncateMax(s string, prefixLen int) (any, bool) {
	r := []rune(s)
	if len(r) <= prefixLen {
		return s, true
	}
	for n := prefixLen; n <= 2*prefixLen && n < len(r); n++ {
		switch next := r[n]; {
		case next < 0x7F:
			return string(r[:n]) + "\u007f", true
		case next < utf8.MaxRune:
			return string(r[:n]) + string(utf8.MaxRune), true
		}
	}
	if len(r) <= 2*prefixLen {
		return s, true
	}
	return nil, false
}

// setPath stores v at the nested path of m, creating inner maps.
func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		inner, ok := m[p].(map[string]any)
		if !ok {
			inner = map[string]any{}
			m[p] = inner
		}
		m = inner
	}
	m[path[len(path)-1]] = v
}
