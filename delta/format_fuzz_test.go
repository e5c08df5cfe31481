package delta

// Fuzz targets of the small text and binary formats: deletion vector
// descriptors and files, Z85, the snapshot spec, partition values and
// Hive path escaping.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deltafs/deltafs/delta/action"
)

// FuzzDeletionVector loads a fuzzed descriptor against a fuzzed DV file
// stored where a `u` descriptor with that UUID points: no panic; errors
// wrap ErrCorruptDeletionVector (or the file is missing or unreachable);
// a loaded bitmap holds exactly the descriptor's cardinality.
func FuzzDeletionVector(f *testing.F) {
	for _, b := range fuzzSeedFiles(f, func(p string, size int64) bool {
		return strings.HasPrefix(fileBase(p), "deletion_vector_") && size <= 8<<10
	}, 20) {
		f.Add("u", "ab^-aqEH.-t@S}K{vb[*k^", int32(1), int32(len(b)-9), int64(2), b)
	}
	f.Add("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", int32(-1), int32(40), int64(6), []byte(nil))
	f.Add("p", "file:///tmp/deletion_vector_x.bin", int32(0), int32(4), int64(1), []byte{1, 0, 0, 0, 4})
	f.Fuzz(func(t *testing.T, typ, path string, offset, size int32, card int64, file []byte) {
		d := &DeletionVector{StorageType: typ, PathOrInlineDV: path, SizeInBytes: size, Cardinality: card}
		if offset >= 0 {
			d.Offset = &offset
		}
		store := memStore{}
		if key, err := DVRelativeKey(d); err == nil {
			store[key] = file
		}
		bm, err := LoadDeletionVector(context.Background(), store, "/table", d)
		if err != nil {
			if !wrapsOneOf(err, ErrCorruptDeletionVector, ErrNotExist, ErrUnsupportedFeature, ErrCorruptLog) {
				t.Fatalf("error %v wraps no expected sentinel", err)
			}
			return
		}
		if card != 0 && bm.GetCardinality() != uint64(card) {
			t.Fatalf("loaded %d rows, descriptor says %d", bm.GetCardinality(), card)
		}
	})
}

func fileBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// FuzzZ85 decodes arbitrary text: no panic, and text that decodes from
// plain groups re-encodes to itself; bytes always round-trip.
func FuzzZ85(f *testing.F) {
	f.Add("HelloWorld")
	f.Add("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L")
	f.Add("ab^-aqEH.-t@S}K{vb[*k^")
	f.Add("##0a1")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Z85Decode(s)
		if err == nil && !strings.Contains(s, "#") && Z85Encode(b) != s {
			t.Fatalf("Z85Decode(%q) = %x re-encodes to %q", s, b, Z85Encode(b))
		}
		if len(s)%4 == 0 {
			raw := []byte(s)
			back, err := Z85Decode(Z85Encode(raw))
			if err != nil || string(back) != s {
				t.Fatalf("bytes %x do not round-trip: %x, %v", raw, back, err)
			}
		}
	})
}

// FuzzParseSpec parses arbitrary specs: no panic, errors wrap
// ErrInvalidSpec, and the canonical text of a spec parses to a spec
// selecting the same snapshot.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"latest", "v0", "v42", "v007", "2026-05-01", "2026-05-01T14:30:00Z",
		"2026-05-01T14:30:00.123+02:00", "2026-05-01T14:30:00.5", "20260501143000123", "v999999999999999999", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseSpec(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("error %v does not wrap ErrInvalidSpec", err)
			}
			return
		}
		again, err := ParseSpec(spec.String())
		if err != nil {
			t.Fatalf("ParseSpec(%q) = %+v whose String %q does not parse: %v", s, spec, spec.String(), err)
		}
		if again.Latest != spec.Latest || again.IsTime != spec.IsTime || again.Version != spec.Version || !again.Time.Equal(spec.Time) {
			t.Fatalf("ParseSpec(%q) = %+v, but its String %q parses to %+v", s, spec, spec.String(), again)
		}
		if !spec.Latest && !spec.IsTime && spec.Version < 0 {
			t.Fatalf("ParseSpec(%q) = negative version %d", s, spec.Version)
		}
	})
}

// partitionFuzzTypes are the partitionable types, picked by a fuzzed byte.
var partitionFuzzTypes = []DataType{
	PrimitiveType{Name: "string"}, PrimitiveType{Name: "binary"}, PrimitiveType{Name: "byte"}, PrimitiveType{Name: "short"},
	PrimitiveType{Name: "integer"}, PrimitiveType{Name: "long"}, PrimitiveType{Name: "float"}, PrimitiveType{Name: "double"},
	PrimitiveType{Name: "boolean"}, PrimitiveType{Name: "date"}, PrimitiveType{Name: "timestamp"}, PrimitiveType{Name: "timestamp_ntz"},
	DecimalType{Precision: 10, Scale: 2}, DecimalType{Precision: 38, Scale: 18}, DecimalType{Precision: 5, Scale: 0},
}

// FuzzPartitionValue parses a serialized partition value: no panic, errors
// wrap ErrCorruptLog, and the canonical text of a parsed value, when it has
// one, is a fixed point (it parses, and formats to itself). Formatting may
// refuse a value (a year outside 0000-9999 once in UTC), never write text
// that does not parse back.
func FuzzPartitionValue(f *testing.F) {
	for i, s := range []string{"a b", "x", "-128", "32767", "2147483647", "-9223372036854775808", "1.0E-5",
		"NaN", "true", "2021-02-29", "2021-01-01 10:00:00.123456", "2021-01-01T10:00:00.1+01:00",
		"123.45", "0E-10", "99999"} {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, which uint8, s string) {
		typ := partitionFuzzTypes[int(which)%len(partitionFuzzTypes)]
		v, err := ParsePartitionValue(typ, &s)
		if err != nil {
			if !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("error %v does not wrap ErrCorruptLog", err)
			}
			return
		}
		if v == nil {
			return
		}
		text, err := FormatPartitionValue(typ, v)
		if err != nil {
			return // not representable (a year past 9999 in UTC): writers refuse it
		}
		v2, err := ParsePartitionValue(typ, text)
		if err != nil {
			t.Fatalf("%s %q: canonical text %q does not parse: %v", action.TypeString(typ), s, *text, err)
		}
		text2, err := FormatPartitionValue(typ, v2)
		if err != nil || *text2 != *text {
			t.Fatalf("%s %q: canonical text %q is not a fixed point: %v, %v", action.TypeString(typ), s, *text, text2, err)
		}
	})
}

// FuzzHiveEscape checks that Hive path escaping round-trips, yields one
// safe path segment (no '/', no control character, never "." or ".."),
// and that unescaping arbitrary text never panics.
func FuzzHiveEscape(f *testing.F) {
	for _, s := range []string{"", "a", "a=b", "100%", "..", ".", "x/y", "é\x01\x7f", "__HIVE_DEFAULT_PARTITION__", "%2", "%zz"} {
		f.Add("col", s)
	}
	f.Fuzz(func(t *testing.T, col, val string) {
		UnescapeHivePathName(val)
		ParseHiveSegment(val)
		if !utf8.ValidString(val) {
			if _, err := UnescapeHivePathName(EscapeHivePathName(val)); err == nil {
				t.Fatalf("%q is not UTF-8 but its escape unescapes", val)
			}
			return // refused, never committed as U+FFFD
		}
		esc := EscapeHivePathName(val)
		if back, err := UnescapeHivePathName(esc); err != nil || back != val {
			t.Fatalf("%q escapes to %q which unescapes to %q, %v", val, esc, back, err)
		}
		if col == "" {
			return
		}
		seg := HivePathSegment(col, &val)
		if !utf8.ValidString(col) {
			if _, _, err := ParseHiveSegment(seg); err == nil {
				t.Fatalf("segment %q: column %q is not UTF-8 but parses", seg, col)
			}
			return
		}
		if strings.ContainsAny(seg, "/\x00") || seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("segment %q of (%q, %q) is not one safe path segment", seg, col, val)
		}
		c, v, err := ParseHiveSegment(seg)
		if err != nil || c != col {
			t.Fatalf("segment %q of (%q, %q) parses to (%q, %v), %v", seg, col, val, c, v, err)
		}
		if val == "" || val == HiveDefaultPartition {
			return // both are null in a path; a value equal to the marker is not representable
		}
		if v == nil || *v != val {
			t.Fatalf("segment %q of (%q, %q) parses to value %v", seg, col, val, v)
		}
	})
}
