package nfsfront

// XDR (RFC 4506) decoding and encoding, bounded by the record.

import (
	"encoding/binary"
	"errors"
)

// XDR (RFC 4506), as NFSv3 and ONC RPC use it: big-endian 32-bit units,
// opaque data and strings length-prefixed and padded to 4 bytes. The
// decoder reads a whole record already in memory and never allocates more
// than the record holds: a length beyond the record's end, or beyond the
// field's own limit, is errGarbage.

var errGarbage = errors.New("malformed XDR arguments")

// decoder reads XDR from one record.
type decoder struct {
	b   []byte
	err error // the first error; every read after it returns zero values
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errGarbage
	}
	d.b = nil
}

func (d *decoder) uint32() uint32 {
	if len(d.b) < 4 {
		d.fail()
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bool() bool { return d.uint32() != 0 }

// opaque returns variable-length opaque data of at most max bytes,
// aliasing the record.
func (d *decoder) opaque(max int) []byte {
	n := d.uint32()
	if d.err != nil {
		return nil
	}
	padded := (uint64(n) + 3) &^ 3
	if uint64(n) > uint64(max) || padded > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[padded:]
	return v
}

func (d *decoder) string(max int) string { return string(d.opaque(max)) }

// encoder appends XDR to a buffer.
type encoder struct {
	b      []byte
	pooled bool // b is a reply buffer to give back once written (getBuf)
}

func (e *encoder) uint32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *encoder) uint64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }

func (e *encoder) bool(v bool) {
	if v {
		e.uint32(1)
	} else {
		e.uint32(0)
	}
}

func (e *encoder) opaque(v []byte) {
	e.uint32(uint32(len(v)))
	e.fixed(v)
}

func (e *encoder) fixed(v []byte) {
	e.b = append(e.b, v...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) string(s string) {
	e.uint32(uint32(len(s)))
	e.b = append(e.b, s...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}
