package pqfile

import (
	"encoding/binary"
	"fmt"
)

// A small reader of thrift compact-protocol bytes that finds where fields and values are without
// decoding them, so that a footer encoded by parquet-go can be edited field by field (see
// nullcount.go). Every read is bounds-checked: malformed input is ErrCorrupt, never a panic.

// Compact-protocol types, as in the low nibble of a field or list header.
const (
	tStop   = 0
	tTrue   = 1 // bool true in a field header; bool element type in a list header
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
	tUUID   = 13
)

// maxThriftDepth bounds the nesting of structs and containers; Parquet footers nest about 6 deep.
const maxThriftDepth = 64

// tfield is one field of an encoded struct: its id and type, and where its header and value lie.
// A bool field's value is in its header (typ tTrue or tFalse), so value == end.
type tfield struct {
	id    int16
	typ   byte
	start int // offset of the field header
	value int // offset of the value, right after the header
	end   int // offset after the value
}

// thriftBuf is thrift compact-protocol bytes. Offsets passed to its methods are within [0, len].
type thriftBuf []byte

// fieldVisitor may read the value of field f (whose end is not set yet) and return the offset
// after it, or -1 to have the value skipped. depth is the nesting depth of f's struct.
type fieldVisitor func(f tfield, depth int) (end int, err error)

// elemVisitor may read element i of a list of structs, at off, and return the offset after it,
// or -1 to have it skipped. depth is the nesting depth of the element.
type elemVisitor func(i, off, depth int) (end int, err error)

func thriftCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: thrift: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// need returns off+n if n more bytes are available at off.
func (b thriftBuf) need(off, n int) (int, error) {
	if n < 0 || n > len(b)-off {
		return 0, thriftCorrupt("%d bytes needed at %d of %d", n, off, len(b))
	}
	return off + n, nil
}

// uvarint reads an unsigned varint at off and returns it and the offset after it.
func (b thriftBuf) uvarint(off int) (uint64, int, error) {
	v, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, 0, thriftCorrupt("bad varint at %d", off)
	}
	return v, off + n, nil
}

// walkStruct reads the struct at off (at nesting depth), offering each field to visit (nil: skip
// all), and returns its fields in order and the offset after its stop byte.
func (b thriftBuf) walkStruct(off, depth int, visit fieldVisitor) ([]tfield, int, error) {
	return b.structFields(nil, true, off, depth, visit)
}

// skipStruct is walkStruct without collecting the fields: it allocates nothing.
func (b thriftBuf) skipStruct(off, depth int, visit fieldVisitor) (int, error) {
	_, end, err := b.structFields(nil, false, off, depth, visit)
	return end, err
}

// structFields is walkStruct, appending the fields to dst if collect.
func (b thriftBuf) structFields(dst []tfield, collect bool, off, depth int, visit fieldVisitor) ([]tfield, int, error) {
	if depth > maxThriftDepth {
		return nil, 0, thriftCorrupt("nesting deeper than %d", maxThriftDepth)
	}
	fields := dst
	var prev int16
	for {
		var f tfield
		var err error
		if off < len(b) && b[off]>>4 != 0 && b[off]&0x0f != tStop {
			// The common header, inline: a one-byte id delta and the type.
			f = tfield{id: prev + int16(b[off]>>4), typ: b[off] & 0x0f, start: off, value: off + 1}
		} else {
			if f, err = b.fieldHeader(off, prev); err != nil {
				return nil, 0, err
			}
			if f.typ == tStop {
				return fields, f.value, nil
			}
		}
		f.end = -1
		if visit != nil {
			if f.end, err = visit(f, depth); err != nil {
				return nil, 0, err
			}
		}
		if f.end < 0 {
			if f.end, err = b.skip(f.value, f.typ, depth); err != nil {
				return nil, 0, err
			}
		}
		if collect {
			fields = append(fields, f)
		}
		off, prev = f.end, f.id
	}
}

// fieldHeader reads the field header at off, the previous field's id being prev. A stop byte
// gives typ tStop with value just after it.
func (b thriftBuf) fieldHeader(off int, prev int16) (tfield, error) {
	if off >= len(b) {
		return tfield{}, thriftCorrupt("struct ends at %d without a stop", off)
	}
	h := b[off]
	f := tfield{typ: h & 0x0f, start: off, value: off + 1}
	if h == tStop {
		return f, nil
	}
	if d := int16(h >> 4); d != 0 {
		f.id = prev + d
		return f, nil
	}
	v, next, err := b.uvarint(off + 1)
	if err != nil {
		return tfield{}, err
	}
	id := int64(v>>1) ^ -int64(v&1) // zigzag
	if id != int64(int16(id)) {
		return tfield{}, thriftCorrupt("field id %d at %d", id, off)
	}
	f.id, f.value = int16(id), next
	return f, nil
}

// skip returns the offset after the value of type typ at off, in a struct at depth.
func (b thriftBuf) skip(off int, typ byte, depth int) (int, error) {
	switch typ {
	case tTrue, tFalse:
		return off, nil // in the field header
	case tByte:
		return b.need(off, 1)
	case tI16, tI32, tI64:
		_, end, err := b.uvarint(off)
		return end, err
	case tDouble:
		return b.need(off, 8)
	case tUUID:
		return b.need(off, 16)
	case tBinary:
		n, end, err := b.uvarint(off)
		if err != nil || n > uint64(len(b)-end) {
			return 0, thriftCorrupt("binary of %d bytes at %d", n, off)
		}
		return end + int(n), nil
	case tList, tSet:
		return b.walkList(off, depth+1, nil)
	case tMap:
		return b.skipMap(off, depth+1)
	case tStruct:
		return b.skipStruct(off, depth+1, nil)
	}
	return 0, thriftCorrupt("unknown type %d at %d", typ, off)
}

// skipElem returns the offset after an element of type typ at off in a container at depth; a
// bool element is a whole byte.
func (b thriftBuf) skipElem(off int, typ byte, depth int) (int, error) {
	if typ == tTrue || typ == tFalse {
		return b.need(off, 1)
	}
	return b.skip(off, typ, depth-1)
}

// listHeader reads the list or set header at off and returns the element type, the element
// count (at most the bytes left, as every element takes one byte or more) and the offset of the
// first element.
func (b thriftBuf) listHeader(off int) (byte, int, int, error) {
	if off >= len(b) {
		return 0, 0, 0, thriftCorrupt("list header past the end at %d", off)
	}
	typ, n, next := b[off]&0x0f, uint64(b[off]>>4), off+1
	if n == 15 {
		var err error
		if n, next, err = b.uvarint(next); err != nil {
			return 0, 0, 0, err
		}
	}
	if n > uint64(len(b)-next) {
		return 0, 0, 0, thriftCorrupt("list of %d elements in %d bytes at %d", n, len(b)-next, off)
	}
	return typ, int(n), next, nil
}

// walkList reads the list or set at off, whose elements are at depth, offering each element to
// visit if they are structs (nil: skip all), and returns the offset after it. A visitor on a list
// of anything but structs is ErrCorrupt.
func (b thriftBuf) walkList(off, depth int, visit elemVisitor) (int, error) {
	if depth > maxThriftDepth {
		return 0, thriftCorrupt("nesting deeper than %d", maxThriftDepth)
	}
	typ, n, off, err := b.listHeader(off)
	if err != nil {
		return 0, err
	}
	if visit != nil && typ != tStruct {
		return 0, thriftCorrupt("list of type %d where structs are expected", typ)
	}
	for i := range n {
		end := -1
		if visit != nil {
			if end, err = visit(i, off, depth); err != nil {
				return 0, err
			}
		}
		if end < 0 {
			if end, err = b.skipElem(off, typ, depth); err != nil {
				return 0, err
			}
		}
		off = end
	}
	return off, nil
}

// skipMap returns the offset after the map at off, whose entries are at depth.
func (b thriftBuf) skipMap(off, depth int) (int, error) {
	if depth > maxThriftDepth {
		return 0, thriftCorrupt("nesting deeper than %d", maxThriftDepth)
	}
	n, off, err := b.uvarint(off)
	if err != nil || n == 0 {
		return off, err
	}
	if off >= len(b) || n > uint64(len(b)-off)/2 {
		return 0, thriftCorrupt("map of %d entries at %d", n, off)
	}
	kt, vt := b[off]>>4, b[off]&0x0f
	off++
	for range n {
		if off, err = b.skipElem(off, kt, depth); err != nil {
			return 0, err
		}
		if off, err = b.skipElem(off, vt, depth); err != nil {
			return 0, err
		}
	}
	return off, nil
}

// splice replaces the bytes [start, end) with with.
type splice struct {
	start, end int
	with       []byte
}

// dropFields appends to dst the splices that remove from a struct (fields being all its fields, in
// order) every field for which drop is true: their headers and values go, and the header of the
// first field kept after them is written again with its id relative to the field kept before.
func dropFields(dst []splice, fields []tfield, drop func(tfield) bool) []splice {
	ss := dst
	var prev int16 // id of the last field kept
	from := -1     // start of the run of dropped fields before f, or -1
	for _, f := range fields {
		switch {
		case drop(f):
			if from < 0 {
				from = f.start
			}
			continue
		case from >= 0:
			ss = append(ss, splice{start: from, end: f.value, with: appendFieldHeader(nil, prev, f.id, f.typ)})
			from = -1
		}
		prev = f.id
	}
	if from >= 0 {
		ss = append(ss, splice{start: from, end: fields[len(fields)-1].end})
	}
	return ss
}

// appendFieldHeader appends the compact header of field id of type typ after a field prev (0 at
// the start of a struct): a one-byte delta when it fits, else the type and the zigzag id.
func appendFieldHeader(dst []byte, prev, id int16, typ byte) []byte {
	if d := int(id) - int(prev); d > 0 && d <= 15 {
		return append(dst, byte(d)<<4|typ)
	}
	dst = append(dst, typ)
	return binary.AppendUvarint(dst, uint64(uint16(id<<1^id>>15)))
}

// applySplices returns b with the splices (sorted by start, not overlapping) applied, in a new
// slice.
func applySplices(b []byte, ss []splice) []byte {
	n := len(b) + 8 // room for a trailer after (spliceConstants)
	for _, s := range ss {
		n += len(s.with) - (s.end - s.start)
	}
	out := make([]byte, 0, n)
	pos := 0
	for _, s := range ss {
		out = append(out, b[pos:s.start]...)
		out = append(out, s.with...)
		pos = s.end
	}
	return append(out, b[pos:]...)
}
