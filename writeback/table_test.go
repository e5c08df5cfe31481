package writeback

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafs/deltafs/delta"
)

// testTable describes a table whose version 0 a test writes itself.
type testTable struct {
	schema   string            // schemaString (a Delta struct type in JSON)
	config   map[string]string // metaData.configuration
	protocol string            // the protocol action's JSON; "" is reader 1, writer 2
	extra    []string          // more action lines for version 0 (domainMetadata, ...)
	parts    []string          // partition columns
}

// create writes version 0 of the table in a fresh directory and returns it.
func (tt testTable) create(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	proto := tt.protocol
	if proto == "" {
		proto = `{"minReaderVersion":1,"minWriterVersion":2}`
	}
	parts := tt.parts
	if parts == nil {
		parts = []string{}
	}
	meta, err := json.Marshal(map[string]any{
		"id": "00000000-0000-0000-0000-00000000000c", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": tt.schema, "partitionColumns": parts, "configuration": tt.config, "createdTime": 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}`,
		`{"protocol":` + proto + `}`,
		`{"metaData":` + string(meta) + `}`,
	}
	lines = append(lines, tt.extra...)
	var body []byte
	for _, l := range lines {
		body = append(body, l+"\n"...)
	}
	log := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(log, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(delta.CommitKey(0))), body, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// structSchema builds a schemaString from fields given as JSON objects.
func structSchema(fields ...string) string {
	s := `{"type":"struct","fields":[`
	for i, f := range fields {
		if i > 0 {
			s += ","
		}
		s += f
	}
	return s + `]}`
}

// field is one StructField in JSON; typ is a JSON value (a quoted name or
// an object) and meta the metadata object ("" for none).
func field(name, typ string, nullable bool, meta string) string {
	if meta == "" {
		meta = "{}"
	}
	n := "false"
	if nullable {
		n = "true"
	}
	return `{"name":"` + name + `","type":` + typ + `,"nullable":` + n + `,"metadata":` + meta + `}`
}
