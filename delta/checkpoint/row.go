package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/parquet-go/parquet-go"
)

// pqRowReader reads the fields of one checkpoint row, converting Parquet
// values to the Go types of actions.go. Its first error sticks: later reads
// return zero values and the caller reports err once per row, which keeps
// the action decoders declarative.
type pqRowReader struct {
	row int64
	err error
	in  *pqInterner
	enc []byte // scratch: the current map's entries (appendMapEntry)
}

func (rr *pqRowReader) fail(err error) {
	if rr.err == nil {
		rr.err = err
	}
}

// value returns the row's value of a non-repeated leaf; ok is false when it
// is null (or after an error).
func (rr *pqRowReader) value(l *pqLeaf) (parquet.Value, bool) {
	if rr.err != nil {
		return parquet.Value{}, false
	}
	v, err := l.value(rr.row)
	if err != nil {
		rr.fail(err)
		return v, false
	}
	return v, !v.IsNull()
}

// bytesOf returns the bytes of a BYTE_ARRAY value (valid until the leaf
// moves on), or nil for a null value.
func (rr *pqRowReader) bytesOf(l *pqLeaf, v parquet.Value) []byte {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return v.ByteArray()
	}
	if !v.IsNull() {
		rr.fail(fmt.Errorf("column %s: %v value where a string was expected", l.name, v.Kind()))
	}
	return nil
}

func (rr *pqRowReader) str(l *pqLeaf) string {
	v, ok := rr.value(l)
	if !ok {
		return ""
	}
	return string(rr.bytesOf(l, v))
}

// internStr is str for values that repeat across rows.
func (rr *pqRowReader) internStr(l *pqLeaf) string {
	v, ok := rr.value(l)
	if !ok {
		return ""
	}
	return rr.in.str(rr.bytesOf(l, v))
}

func (rr *pqRowReader) optStr(l *pqLeaf) *string {
	v, ok := rr.value(l)
	if !ok {
		return nil
	}
	s := string(rr.bytesOf(l, v))
	return &s
}

// int64Val reads an INT32 or INT64 value; ok is false when it is null.
func (rr *pqRowReader) int64Val(l *pqLeaf) (n int64, ok bool) {
	v, ok := rr.value(l)
	if !ok {
		return 0, false
	}
	switch v.Kind() {
	case parquet.Int64:
		return v.Int64(), true
	case parquet.Int32:
		return int64(v.Int32()), true
	}
	rr.fail(fmt.Errorf("column %s: %v value where an integer was expected", l.name, v.Kind()))
	return 0, false
}

func (rr *pqRowReader) optI64(l *pqLeaf) *int64 {
	n, ok := rr.int64Val(l)
	if !ok {
		return nil
	}
	return &n
}

func (rr *pqRowReader) i64(l *pqLeaf) int64 {
	n, _ := rr.int64Val(l)
	return n
}

// int32Val is int64Val for fields that the protocol declares as int.
func (rr *pqRowReader) int32Val(l *pqLeaf) (int32, bool) {
	n, ok := rr.int64Val(l)
	if ok && (n < math.MinInt32 || n > math.MaxInt32) {
		rr.fail(fmt.Errorf("column %s: %d out of int range", l.name, n))
		return 0, false
	}
	return int32(n), ok
}

func (rr *pqRowReader) optI32(l *pqLeaf) *int32 {
	n, ok := rr.int32Val(l)
	if !ok {
		return nil
	}
	return &n
}

func (rr *pqRowReader) i32(l *pqLeaf) int32 {
	n, _ := rr.int32Val(l)
	return n
}

func (rr *pqRowReader) boolVal(l *pqLeaf) (b, ok bool) {
	v, ok := rr.value(l)
	if !ok {
		return false, false
	}
	if v.Kind() != parquet.Boolean {
		rr.fail(fmt.Errorf("column %s: %v value where a boolean was expected", l.name, v.Kind()))
		return false, false
	}
	return v.Boolean(), true
}

func (rr *pqRowReader) optBool(l *pqLeaf) *bool {
	b, ok := rr.boolVal(l)
	if !ok {
		return nil
	}
	return &b
}

func (rr *pqRowReader) boolean(l *pqLeaf) bool {
	b, _ := rr.boolVal(l)
	return b
}

// ptrMap reads a map<string,string> with nullable values: nil when the map
// is null, empty (not nil) when it has no entries, like encoding/json.
// Equal maps share one Go map (see pqInterner.ptrMap).
func (rr *pqRowReader) ptrMap(m *pqMap) map[string]*string {
	n, ok := rr.readMap(m)
	if !ok {
		return nil
	}
	return rr.in.ptrMap(rr.enc, n)
}

// strMap is ptrMap for maps whose null values read as "", not shared.
func (rr *pqRowReader) strMap(m *pqMap) map[string]string {
	n, ok := rr.readMap(m)
	if !ok {
		return nil
	}
	out := make(map[string]string, n)
	for rest := rr.enc; len(rest) > 0; {
		var k, v []byte
		k, v, _, rest = nextMapEntry(rest)
		out[rr.in.str(k)] = string(v)
	}
	return out
}

// readMap encodes the row's map entries into rr.enc (see appendMapEntry),
// returning their count and whether the map is non-null. Key and value
// leaves are read in lock step.
func (rr *pqRowReader) readMap(m *pqMap) (n int, present bool) {
	rr.enc = rr.enc[:0]
	if m.key == nil || rr.err != nil {
		return 0, false
	}
	k, err := m.key.first(rr.row)
	var v parquet.Value
	if err == nil && m.val != nil {
		v, err = m.val.first(rr.row)
	}
	present = k.DefinitionLevel() >= m.presentDef
	for err == nil {
		if k.DefinitionLevel() >= m.entryDef {
			var vb []byte
			hasV := m.val != nil && v.DefinitionLevel() >= m.valDef
			if hasV {
				vb = rr.bytesOf(m.val, v)
			}
			rr.enc = appendMapEntry(rr.enc, rr.bytesOf(m.key, k), vb, !hasV)
			n++
		}
		var more bool
		if more, err = m.nextEntry(&k, &v); !more {
			break
		}
	}
	if err != nil {
		rr.fail(err)
		return 0, false
	}
	return n, present
}

// appendMapEntry encodes one map entry unambiguously: uvarint(len(k)), k,
// then 0 for a null value or uvarint(len(v)+1), v.
func appendMapEntry(b, k, v []byte, null bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	if null {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	return append(b, v...)
}

// nextMapEntry decodes the first entry of b (written by appendMapEntry).
func nextMapEntry(b []byte) (k, v []byte, null bool, rest []byte) {
	n, w := binary.Uvarint(b)
	k, b = b[w:w+int(n)], b[w+int(n):]
	n, w = binary.Uvarint(b)
	if n == 0 {
		return k, nil, true, b[w:]
	}
	n--
	return k, b[w : w+int(n)], false, b[w+int(n):]
}

// nextEntry moves both leaves to the row's next entry; false at its end.
func (m *pqMap) nextEntry(k, v *parquet.Value) (bool, error) {
	nk, kmore, err := m.key.more()
	if err != nil || m.val == nil {
		*k = nk
		return kmore, err
	}
	nv, vmore, err := m.val.more()
	if err != nil {
		return false, err
	}
	if kmore != vmore {
		return false, fmt.Errorf("map %s: key and value columns disagree", m.key.name)
	}
	*k, *v = nk, nv
	return kmore, nil
}

// list reads a list<string>: nil when null, empty when it has no elements;
// null elements read as "".
func (rr *pqRowReader) list(lc *pqList) []string {
	if lc.elem == nil || rr.err != nil {
		return nil
	}
	v, err := lc.elem.first(rr.row)
	present := v.DefinitionLevel() >= lc.presentDef
	var out []string
	if present {
		out = []string{}
	}
	for more := true; err == nil && more; v, more, err = lc.elem.more() {
		if v.DefinitionLevel() >= lc.entryDef {
			var s string
			if v.DefinitionLevel() >= lc.elemDef {
				s = rr.in.str(rr.bytesOf(lc.elem, v))
			}
			out = append(out, s)
		}
	}
	if err != nil {
		rr.fail(err)
		return nil
	}
	return out
}
