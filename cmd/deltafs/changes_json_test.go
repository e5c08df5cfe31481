package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// deltafs changes --json gives values as a reader would write them, not
// as Parquet encodes them: decimals with their scale, dates, timestamps
// (with a zone only when adjusted to UTC), Spark's INT96 timestamps.
func TestChangesJSONValues(t *testing.T) {
	for _, c := range []struct {
		typ  parquet.Type
		v    any
		want string
	}{
		{parquet.Decimal(2, 9, parquet.Int32Type).Type(), int32(12345), `123.45`},
		{parquet.Decimal(3, 18, parquet.Int64Type).Type(), int64(-5), `-0.005`},
		{parquet.Decimal(1, 4, parquet.FixedLenByteArrayType(2)).Type(), []byte{0xff, 0x85}, `-12.3`},
		{parquet.Decimal(0, 4, parquet.FixedLenByteArrayType(2)).Type(), []byte{0x01, 0x00}, `256`},
		{parquet.Date().Type(), int32(-1), `"1969-12-31"`},
		{parquet.Timestamp(parquet.Microsecond).Type(), int64(1_500_000), `"1970-01-01T00:00:01.5Z"`},
		{parquet.TimestampAdjusted(parquet.Microsecond, false).Type(), int64(1_500_000), `"1970-01-01T00:00:01.5"`},
		{parquet.TimestampAdjusted(parquet.Millisecond, true).Type(), int64(86_400_000), `"1970-01-02T00:00:00Z"`},
		{parquet.Int96Type, deprecated.Int96{1_000_000_000, 0, 2440589}, `"1970-01-02T00:00:01Z"`},
		{parquet.Int64Type, int64(7), `7`},
	} {
		b, err := json.Marshal(jsonValue(c.typ, c.v))
		if err != nil || string(b) != c.want {
			t.Errorf("%v %v: %s, %v; want %s", c.typ, c.v, b, err, c.want)
		}
	}
}

// A decimal column comes out of deltafs changes --json exactly: an INT32
// decimal(9,2) of 1234567.89 (which parquet-go reconstructs as a float32,
// 1234567.875) and an INT96 timestamp as text.
func TestChangesJSONDecimalExact(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	schema := parquet.NewSchema("spark_schema", parquet.Group{
		"d":  parquet.Optional(parquet.Decimal(2, 9, parquet.Int32Type)),
		"ts": parquet.Optional(parquet.Leaf(parquet.Int96Type)),
	})
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, schema)
	row := parquet.Row{parquet.Int32Value(123456789).Level(0, 1, 0), parquet.Int96Value(deprecated.Int96{1_000_000_000, 0, 2440589}).Level(0, 1, 1)}
	if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "part-0.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tableSchema := `{"type":"struct","fields":[{"name":"d","type":"decimal(9,2)","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}`
	log := strings.Join([]string{
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":4}}`,
		fmt.Sprintf(`{"metaData":{"id":"d","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{"delta.enableChangeDataFeed":"true"},"createdTime":0}}`, tableSchema),
		fmt.Sprintf(`{"add":{"path":"part-0.parquet","partitionValues":{},"size":%d,"modificationTime":0,"dataChange":true}}`, buf.Len()),
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", 0)), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := deltafs(t, "changes", root, "0", "--json")
	if code != 0 {
		t.Fatalf("changes: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"d":1234567.89,`) || !strings.Contains(out, `"ts":"1970-01-02T00:00:01Z"`) {
		t.Errorf("changes --json: %s; want d 1234567.89 and ts 1970-01-02T00:00:01Z", out)
	}
}
