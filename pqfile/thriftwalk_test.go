package pqfile

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// walkInner and walkAll cover every compact type parquet-go's thrift writes, with ids that need
// the long field header form (delta > 15) after field 3. Maps have one entry: parquet-go writes
// map entries in Go iteration order.
type walkInner struct {
	X int32  `thrift:"1"`
	S string `thrift:"2"`
}

type walkAll struct {
	T    bool                 `thrift:"1"`
	F    bool                 `thrift:"2,writezero"`
	I8   int8                 `thrift:"3"`
	I16  int16                `thrift:"20"`
	I32  int32                `thrift:"21"`
	I64  int64                `thrift:"22"`
	D    float64              `thrift:"23"`
	Bin  []byte               `thrift:"24"`
	L    []int32              `thrift:"25"`
	Long []walkInner          `thrift:"26"`
	Bs   []bool               `thrift:"27"`
	M    map[string]walkInner `thrift:"28"`
	Em   map[string]int32     `thrift:"29,writezero"`
	In   walkInner            `thrift:"30"`
	Neg  int64                `thrift:"31"`
}

func sampleWalkAll() walkAll {
	v := walkAll{T: true, I8: -3, I16: -300, I32: 1 << 20, I64: -1 << 40, D: 2.5, Bin: []byte("bin"),
		L: []int32{1, -2, 3}, Bs: []bool{true, false, true}, In: walkInner{X: 7, S: "in"}, Neg: -1,
		M: map[string]walkInner{"a": {X: 1, S: "bb"}}, Em: map[string]int32{}}
	for i := range 40 { // long list form
		v.Long = append(v.Long, walkInner{X: int32(i), S: "e"})
	}
	return v
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	var proto thrift.CompactProtocol
	b, err := thrift.Marshal(&proto, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestThriftWalkAllTypes(t *testing.T) {
	b := marshal(t, sampleWalkAll())
	fields, end, err := thriftBuf(b).walkStruct(0, 0, nil)
	if err != nil || end != len(b) {
		t.Fatalf("walk: end %d of %d, %v", end, len(b), err)
	}
	var ids []int16
	var types []byte
	for i, f := range fields {
		ids, types = append(ids, f.id), append(types, f.typ)
		if i > 0 && f.start != fields[i-1].end {
			t.Errorf("field %d starts at %d, previous ends at %d", f.id, f.start, fields[i-1].end)
		}
	}
	wantIDs := []int16{1, 2, 3, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}
	wantTypes := []byte{tTrue, tFalse, tByte, tI16, tI32, tI64, tDouble, tBinary, tList, tList, tList, tMap, tMap, tStruct, tI64}
	if !reflect.DeepEqual(ids, wantIDs) || !bytes.Equal(types, wantTypes) {
		t.Errorf("fields %v types %v, want %v %v", ids, types, wantIDs, wantTypes)
	}
}

func TestThriftWalkHandCrafted(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty struct", []byte{0}},
		{"uuid", append([]byte{0x1d}, append(make([]byte, 16), 0)...)},
		{"set of i32", []byte{0x1a, 0x25, 2, 4, 0}},
		{"long list of bools", append([]byte{0x19, 0xf1, 16}, append(make([]byte, 16), 0)...)},
		{"negative field id", []byte{0x05, 0x01, 0x02, 0}}, // id -1, i32 1
		{"map of lists", []byte{0x1b, 1, 0x89, 1, 'k', 0x15, 2, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, end, err := thriftBuf(tc.b).walkStruct(0, 0, nil); err != nil || end != len(tc.b) {
				t.Fatalf("end %d of %d, %v", end, len(tc.b), err)
			}
		})
	}
}

func TestThriftWalkCorrupt(t *testing.T) {
	deep := bytes.Repeat([]byte{0x1c}, maxThriftDepth+2) // struct in struct in ...
	deep = append(deep, bytes.Repeat([]byte{0}, maxThriftDepth+3)...)
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"no stop", []byte{0x15, 2}},
		{"unknown type", []byte{0x1e, 0}},
		{"binary too long", []byte{0x18, 10, 'a', 0}},
		{"list too long", []byte{0x19, 0xf5, 0xff, 0xff, 0x03, 0}},
		{"map too long", []byte{0x1b, 100, 0x55, 0}},
		{"varint overflow", append([]byte{0x16}, bytes.Repeat([]byte{0xff}, 11)...)},
		{"field id overflow", []byte{0x05, 0xff, 0xff, 0x7f, 0x02, 0}},
		{"too deep", deep},
		{"double short", []byte{0x17, 1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := thriftBuf(tc.b).walkStruct(0, 0, nil); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
	// Every proper prefix of a valid encoding is corrupt.
	b := marshal(t, sampleWalkAll())
	for n := range len(b) {
		if _, _, err := thriftBuf(b[:n]).walkStruct(0, 0, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: got %v, want ErrCorrupt", n, err)
		}
	}
}

// TestDropField removes each field in turn from an encoding and checks the result is exactly what
// parquet-go writes for the value without that field.
func TestDropField(t *testing.T) {
	full := sampleWalkAll()
	b := marshal(t, full)
	fields, _, err := thriftBuf(b).walkStruct(0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	zeroOne := []func(*walkAll){
		func(v *walkAll) { v.T = false }, nil /* F is writezero */, func(v *walkAll) { v.I8 = 0 },
		func(v *walkAll) { v.I16 = 0 }, func(v *walkAll) { v.I32 = 0 }, func(v *walkAll) { v.I64 = 0 },
		func(v *walkAll) { v.D = 0 }, func(v *walkAll) { v.Bin = nil }, func(v *walkAll) { v.L = nil },
		func(v *walkAll) { v.Long = nil }, func(v *walkAll) { v.Bs = nil }, func(v *walkAll) { v.M = nil },
		nil /* Em is writezero */, func(v *walkAll) { v.In = walkInner{} }, func(v *walkAll) { v.Neg = 0 },
	}
	// Drop every pair of fields (adjacent ones, the last ones, a run up to the end...).
	for k1, zero1 := range zeroOne {
		for k2, zero2 := range zeroOne {
			if zero1 == nil || zero2 == nil || k2 < k1 {
				continue
			}
			v := full
			zero1(&v)
			zero2(&v)
			want := marshal(t, v)
			drop := func(f tfield) bool { return f.id == fields[k1].id || f.id == fields[k2].id }
			if got := applySplices(b, dropFields(nil, fields, drop)); !bytes.Equal(got, want) {
				t.Errorf("drop fields %d and %d:\n got %x\nwant %x", fields[k1].id, fields[k2].id, got, want)
			}
		}
	}
}

// TestDropFieldsRepeated removes a field that hostile input repeats, and a whole struct's fields.
func TestDropFieldsRepeated(t *testing.T) {
	b := []byte{0x16, 2, 0x16, 4, 0x26, 6, 0xf6, 8, 0x06, 10, 12, 0} // ids 1, 2, 4, 19, 5
	fields, _, err := thriftBuf(b).walkStruct(0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		drop []int16
		want []byte
	}{
		{[]int16{2}, []byte{0x16, 2, 0x36, 6, 0xf6, 8, 0x06, 10, 12, 0}},
		{[]int16{1, 2, 4}, []byte{0x06, 38, 8, 0x06, 10, 12, 0}},
		{[]int16{19}, []byte{0x16, 2, 0x16, 4, 0x26, 6, 0x16, 12, 0}},
		{[]int16{19, 5}, []byte{0x16, 2, 0x16, 4, 0x26, 6, 0}},
		{[]int16{1, 2, 4, 19, 5}, []byte{0}},
	}
	for _, tc := range tests {
		got := applySplices(b, dropFields(nil, fields, func(f tfield) bool { return slices.Contains(tc.drop, f.id) }))
		if !bytes.Equal(got, tc.want) {
			t.Errorf("drop %v: got %x, want %x", tc.drop, got, tc.want)
		}
		if _, end, err := thriftBuf(got).walkStruct(0, 0, nil); err != nil || end != len(got) {
			t.Errorf("drop %v: result does not walk: %v", tc.drop, err)
		}
	}
}

func TestAppendFieldHeader(t *testing.T) {
	tests := []struct {
		prev, id int16
		typ      byte
		want     []byte
	}{
		{0, 1, tI32, []byte{0x15}},
		{1, 16, tI64, []byte{0xf6}},
		{1, 17, tI64, []byte{0x06, 34}},
		{5, 3, tStruct, []byte{0x0c, 6}},
		{0, -1, tTrue, []byte{0x01, 1}},
		{0, 32767, tBinary, []byte{0x08, 0xfe, 0xff, 0x03}},
	}
	for _, tc := range tests {
		if got := appendFieldHeader(nil, tc.prev, tc.id, tc.typ); !bytes.Equal(got, tc.want) {
			t.Errorf("header(%d after %d) = %x, want %x", tc.id, tc.prev, got, tc.want)
		}
	}
}

// TestStripStatsStatistics drops null_count from a Statistics and statistics from a
// ColumnMetaData encoded by parquet-go, and checks every other field decodes unchanged.
func TestStripStatsStatistics(t *testing.T) {
	md := format.ColumnMetaData{Type: format.Int64, Codec: format.Snappy, NumValues: 9,
		PathInSchema: []string{"a"}, Encoding: []format.Encoding{format.Plain}, DataPageOffset: 4,
		Statistics:    format.Statistics{Min: []byte{1}, MaxValue: []byte{9}, NullCount: 4},
		EncodingStats: []format.PageEncodingStats{{Count: 1}}, BloomFilterLength: 0}
	meta := format.FileMetaData{Version: 2, NumRows: 9, Schema: []format.SchemaElement{{Name: "r"}},
		RowGroups: []format.RowGroup{{NumRows: 9, Columns: []format.ColumnChunk{{MetaData: md}, {MetaData: md}}}}}
	b := marshal(t, &meta)
	for _, e := range []statsEdit{dropNullCount, dropStats} {
		got, err := stripStats(b, [][]statsEdit{{keepStats, e}})
		if err != nil {
			t.Fatal(err)
		}
		var back format.FileMetaData
		if err := decodeFooter(got, &back); err != nil {
			t.Fatal(err)
		}
		want := meta
		want.RowGroups = []format.RowGroup{{NumRows: 9, Columns: []format.ColumnChunk{{MetaData: md}, {MetaData: md}}}}
		want.RowGroups[0].Columns[1].MetaData.Statistics.NullCount = 0
		if e == dropStats {
			want.RowGroups[0].Columns[1].MetaData.Statistics = format.Statistics{}
		}
		if !reflect.DeepEqual(back.RowGroups, want.RowGroups) {
			t.Errorf("%v: decoded\n %+v\nwant\n %+v", e, back.RowGroups, want.RowGroups)
		}
		edits, err := statsEdits(got, &back)
		if err != nil || !reflect.DeepEqual(edits, [][]statsEdit{{keepStats, e}}) {
			t.Errorf("%v: edits read back %v, %v", e, edits, err)
		}
	}
}
