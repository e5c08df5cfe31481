package delta

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// fixtureCommit is one parsed commit file of a fixture table.
type fixtureCommit struct {
	fixture string // e.g. "dat/basic_append"
	file    string // base name of the commit
	actions []*Action
}

var commitFileRE = regexp.MustCompile(`^\d{20}\.json$`)

// fixtureCommits reads every fixture's JSON commits in version order,
// grouped by fixture (sorted). Lines that are not valid actions are skipped:
// some logs are deliberately broken and other tests cover action.Parse.
func fixtureCommits(t *testing.T) map[string][]fixtureCommit {
	t.Helper()
	base := testenv.Fixtures(t)
	dirs, err := filepath.Glob(filepath.Join(base, "*", "*", "table", "_delta_log"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixture logs under %s: %v", base, err)
	}
	out := map[string][]fixtureCommit{}
	for _, dir := range dirs {
		name, _ := filepath.Rel(base, filepath.Dir(filepath.Dir(dir)))
		name = filepath.ToSlash(name)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries { // ReadDir sorts by name = by version
			if commitFileRE.MatchString(e.Name()) {
				out[name] = append(out[name], fixtureCommit{name, e.Name(), readCommitLenient(t, filepath.Join(dir, e.Name()))})
			}
		}
	}
	return out
}

func readCommitLenient(t *testing.T, path string) []*Action {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var acts []*Action
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		a := new(Action)
		if json.Unmarshal(sc.Bytes(), a) == nil {
			acts = append(acts, a)
		}
	}
	return acts
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestParseSchema(t *testing.T) {
	tests := []struct {
		name, in string
		want     DataType
	}{
		{"primitives", `{"type":"struct","fields":[
			{"name":"a","type":"long","nullable":false,"metadata":{}},
			{"name":"b","type":"timestamp_ntz","nullable":true,"metadata":{}},
			{"name":"c","type":"decimal(38, 6)","nullable":true,"metadata":{}},
			{"name":"d","type":"decimal","nullable":true}]}`,
			&StructType{Fields: []*StructField{
				{Name: "a", Type: PrimitiveType{Name: "long"}},
				{Name: "b", Type: PrimitiveType{Name: "timestamp_ntz"}, Nullable: true},
				{Name: "c", Type: DecimalType{Precision: 38, Scale: 6}, Nullable: true},
				{Name: "d", Type: DecimalType{Precision: 10, Scale: 0}, Nullable: true},
			}}},
		{"unknown primitive kept", `{"type":"struct","fields":[{"name":"g","type":"geometry(OGC:CRS84)","nullable":true,"metadata":{}}]}`,
			&StructType{Fields: []*StructField{{Name: "g", Type: PrimitiveType{Name: "geometry(OGC:CRS84)"}, Nullable: true}}}},
		{"nested and nullable default", `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[
			{"name":"arr","type":{"type":"array","elementType":"string","containsNull":false},"nullable":true,"metadata":{}},
			{"name":"m","type":{"type":"map","keyType":"integer","valueType":{"type":"array","elementType":"byte"},"valueContainsNull":false},"metadata":{"x":1}}]},
			"nullable":false,"metadata":{}}]}`,
			&StructType{Fields: []*StructField{{Name: "s", Type: &StructType{Fields: []*StructField{
				{Name: "arr", Type: &ArrayType{ElementType: PrimitiveType{Name: "string"}}, Nullable: true, Metadata: map[string]any{}},
				{Name: "m", Type: &MapType{KeyType: PrimitiveType{Name: "integer"}, ValueType: &ArrayType{ElementType: PrimitiveType{Name: "byte"}, ContainsNull: true}},
					Nullable: true, Metadata: map[string]any{"x": json.Number("1")}},
			}}, Metadata: map[string]any{}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSchema(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			normalizeEmptyMetadata(got)
			normalizeEmptyMetadata(tt.want)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %s\nwant %s", mustJSON(t, got), mustJSON(t, tt.want))
			}
		})
	}
}

// normalizeEmptyMetadata makes {} and nil metadata compare equal.
func normalizeEmptyMetadata(t DataType) {
	switch t := t.(type) {
	case *StructType:
		for _, f := range t.Fields {
			if len(f.Metadata) == 0 {
				f.Metadata = nil
			}
			normalizeEmptyMetadata(f.Type)
		}
	case *ArrayType:
		normalizeEmptyMetadata(t.ElementType)
	case *MapType:
		normalizeEmptyMetadata(t.KeyType)
		normalizeEmptyMetadata(t.ValueType)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseSchemaErrors(t *testing.T) {
	for _, in := range []string{
		``, `{`, `[]`, `"long"`, `{"type":"array","elementType":"long"}`,
		`{"type":"struct","fields":[{"type":"long"}]}`,
		`{"type":"struct","fields":[{"name":"a"}]}`,
		`{"type":"struct","fields":[{"name":"a","type":{"type":"udt"}}]}`,
		`{"type":"struct","fields":[{"name":"a","type":"decimal(40,2)"}]}`,
		`{"type":"struct","fields":[{"name":"a","type":"decimal(5,6)"}]}`,
		`{"type":"struct","fields":[{"name":"a","type":"decimal(x)"}]}`,
		`{"type":"struct","fields":[{"name":"a","type":""}]}`,
		`{"type":"struct","fields":[]} {}`,
	} {
		if _, err := ParseSchema(in); !errors.Is(err, ErrCorruptLog) {
			t.Errorf("ParseSchema(%q) = %v, want ErrCorruptLog", in, err)
		}
	}
}

func TestDataTypeString(t *testing.T) {
	s, err := ParseSchema(`{"type":"struct","fields":[{"name":"a","type":{"type":"map","keyType":"string",
		"valueType":{"type":"array","elementType":"decimal(5,2)"}}},{"name":"b","type":"long"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "struct<a:map<string,array<decimal(5,2)>>,b:long>"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestParseSchemaFixtures parses every schemaString of every fixture commit,
// checks the JSON round trip and that the NameMap translates every field
// both ways.
func TestParseSchemaFixtures(t *testing.T) {
	commits := fixtureCommits(t)
	n := 0
	for _, name := range sortedKeys(commits) {
		for _, c := range commits[name] {
			for _, a := range c.actions {
				if a.MetaData == nil || a.MetaData.SchemaString == "" {
					continue // a few upstream logs have metaData without a schema
				}
				n++
				checkFixtureSchema(t, name+"/"+c.file, a.MetaData)
			}
		}
	}
	if n < 250 {
		t.Errorf("parsed only %d fixture schemas, expected the ~290 present", n)
	}
	t.Logf("parsed %d schemaStrings", n)
}

func checkFixtureSchema(t *testing.T, where string, md *Metadata) {
	t.Helper()
	s, err := md.Schema()
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	again, err := ParseSchema(mustJSON(t, s))
	if err != nil || !reflect.DeepEqual(again, s) {
		t.Errorf("%s: round trip differs: %v", where, err)
	}
	var orig any
	_ = json.Unmarshal([]byte(md.SchemaString), &orig)
	var round any
	_ = json.Unmarshal([]byte(mustJSON(t, s)), &round)
	if !reflect.DeepEqual(orig, round) && !strings.Contains(md.SchemaString, `"decimal"`) {
		t.Errorf("%s: re-encoded schema differs from the log's", where)
	}
	nm := NewNameMap(s, md.ColumnMapping())
	forEachField(s, nil, func(lp []string, f *StructField) {
		pp, ok := nm.PhysicalPath(lp)
		if !ok {
			t.Errorf("%s: no physical path for %v", where, lp)
			return
		}
		back, ok := nm.LogicalPath(pp)
		if !ok || !reflect.DeepEqual(back, lp) {
			t.Errorf("%s: LogicalPath(%v) = %v, want %v", where, pp, back, lp)
		}
		if md.ColumnMapping() != ColumnMappingNone {
			if _, ok := f.FieldID(); !ok {
				t.Errorf("%s: column-mapped field %v has no id", where, lp)
			}
		}
	})
	if _, err := md.PartitionSchema(); err != nil {
		t.Errorf("%s: %v", where, err)
	}
}

// forEachField calls fn for every struct field, nested ones included, with
// its Delta-form logical path.
func forEachField(t DataType, path []string, fn func([]string, *StructField)) {
	switch t := t.(type) {
	case *StructType:
		for _, f := range t.Fields {
			fp := appendPath(path, f.Name)
			fn(fp, f)
			forEachField(f.Type, fp, fn)
		}
	case *ArrayType:
		forEachField(t.ElementType, appendPath(path, "element"), fn)
	case *MapType:
		forEachField(t.KeyType, appendPath(path, "key"), fn)
		forEachField(t.ValueType, appendPath(path, "value"), fn)
	}
}

func TestMetadataColumnMappingAndPartitionSchema(t *testing.T) {
	md := &Metadata{
		SchemaString:     `{"type":"struct","fields":[{"name":"Id","type":"long"},{"name":"Day","type":"date"},{"name":"x","type":"string"}]}`,
		PartitionColumns: []string{"x", "day"},
		Configuration:    map[string]string{"delta.columnMapping.mode": "Name"},
	}
	if got := md.ColumnMapping(); got != ColumnMappingName {
		t.Errorf("ColumnMapping() = %q, want name", got)
	}
	ps, err := md.PartitionSchema()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Name != "x" || ps[1].Name != "Day" {
		t.Errorf("PartitionSchema() = %v", mustJSON(t, ps))
	}
	md.PartitionColumns = []string{"nope"}
	if _, err := md.PartitionSchema(); !errors.Is(err, ErrCorruptLog) {
		t.Errorf("missing partition column: err = %v, want ErrCorruptLog", err)
	}
	if got := (&Metadata{}).ColumnMapping(); got != ColumnMappingNone {
		t.Errorf("default ColumnMapping() = %q", got)
	}
	if _, err := (&Metadata{}).Schema(); !errors.Is(err, ErrCorruptLog) {
		t.Errorf("Schema() without schemaString: %v", err)
	}
}

// cmSchema is a column-mapped schema with nested struct, array of struct,
// map of arrays and icebergCompatV2-style nested ids.
const cmSchema = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}},
 {"name":"s","type":{"type":"struct","fields":[
   {"name":"a.b","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-3"}}]},
  "nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-2"}},
 {"name":"arr","type":{"type":"array","elementType":{"type":"struct","fields":[
   {"name":"x","type":"integer","nullable":true,"metadata":{"delta.columnMapping.id":5,"delta.columnMapping.physicalName":"col-5"}}]},"containsNull":true},
  "nullable":true,"metadata":{"delta.columnMapping.id":4,"delta.columnMapping.physicalName":"col-4",
   "delta.columnMapping.nested.ids":{"col-4.element":10}}},
 {"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"long","containsNull":true},"valueContainsNull":true},
  "nullable":true,"metadata":{"delta.columnMapping.id":6,"delta.columnMapping.physicalName":"col-6",
   "delta.columnMapping.nested.ids":{"col-6.key":11,"col-6.value":12,"col-6.value.element":13}}}]}`

func TestNameMap(t *testing.T) {
	s, err := ParseSchema(cmSchema)
	if err != nil {
		t.Fatal(err)
	}
	nm := NewNameMap(s, ColumnMappingID)
	dotted := map[string]string{ // logical -> physical
		"id": "col-1", "s": "col-2", "s.a.b": "col-2.col-3", "arr": "col-4",
		"arr.element": "col-4.element", "arr.element.x": "col-4.element.col-5",
		"m.key": "col-6.key", "m.value.element": "col-6.value.element",
	}
	for l, p := range dotted {
		if got, ok := nm.Physical(l); !ok || got != p {
			t.Errorf("Physical(%q) = %q, %v; want %q", l, got, ok, p)
		}
		if got, ok := nm.Logical(p); !ok || got != l {
			t.Errorf("Logical(%q) = %q, %v; want %q", p, got, ok, l)
		}
	}
	for _, bad := range []string{"col-1", "ID", "s.col-3", "arr.x"} {
		if got, ok := nm.Physical(bad); ok {
			t.Errorf("Physical(%q) = %q, want not found", bad, got)
		}
	}
	paths := []struct{ phys, logical []string }{
		{[]string{"col-2", "col-3"}, []string{"s", "a.b"}},
		{[]string{"col-4", "list", "element", "col-5"}, []string{"arr", "list", "element", "x"}}, // Parquet 3-level
		{[]string{"col-4", "list"}, []string{"arr", "list"}},
		{[]string{"col-4", "element", "col-5"}, []string{"arr", "element", "x"}}, // Delta form
		{[]string{"col-4", "array", "col-5"}, []string{"arr", "array", "x"}},     // 2-level legacy
		{[]string{"col-4", "bag", "array", "col-5"}, []string{"arr", "bag", "array", "x"}},
		{[]string{"col-6", "key_value", "key"}, []string{"m", "key_value", "key"}},
		{[]string{"col-6", "key_value", "value", "list", "element"}, []string{"m", "key_value", "value", "list", "element"}},
		{[]string{"col-6", "value", "element"}, []string{"m", "value", "element"}},
	}
	for _, p := range paths {
		if got, ok := nm.LogicalPath(p.phys); !ok || !reflect.DeepEqual(got, p.logical) {
			t.Errorf("LogicalPath(%v) = %v, %v; want %v", p.phys, got, ok, p.logical)
		}
		if got, ok := nm.PhysicalPath(p.logical); !ok || !reflect.DeepEqual(got, p.phys) {
			t.Errorf("PhysicalPath(%v) = %v, %v; want %v", p.logical, got, ok, p.phys)
		}
	}
	for _, bad := range [][]string{{"id", "x"}, {"col-9"}, {"col-6", "key_value", "nope"}, {"col-1", "element"}} {
		if got, ok := nm.LogicalPath(bad); ok {
			t.Errorf("LogicalPath(%v) = %v, want not found", bad, got)
		}
	}
	ids := []struct {
		path []string
		id   int64
	}{
		{[]string{"id"}, 1}, {[]string{"s", "a.b"}, 3}, {[]string{"arr", "element", "x"}, 5},
		{[]string{"arr", "element"}, 10}, {[]string{"arr", "list", "element"}, 10},
		{[]string{"m", "key"}, 11}, {[]string{"m", "key_value", "value"}, 12}, {[]string{"m", "value", "element"}, 13},
	}
	for _, c := range ids {
		if got, ok := nm.FieldID(c.path); !ok || got != c.id {
			t.Errorf("FieldID(%v) = %d, %v; want %d", c.path, got, ok, c.id)
		}
	}
	if _, ok := nm.FieldID([]string{"arr", "list"}); ok {
		t.Error("FieldID of the Parquet list level should be absent")
	}
	if got, ok := nm.LogicalPathByID(13); !ok || !reflect.DeepEqual(got, []string{"m", "value", "element"}) {
		t.Errorf("LogicalPathByID(13) = %v, %v", got, ok)
	}
	if got, ok := nm.LogicalPathByID(5); !ok || !reflect.DeepEqual(got, []string{"arr", "element", "x"}) {
		t.Errorf("LogicalPathByID(5) = %v, %v", got, ok)
	}
}

func TestNameMapModeNone(t *testing.T) {
	s, err := ParseSchema(cmSchema)
	if err != nil {
		t.Fatal(err)
	}
	nm := NewNameMap(s, ColumnMappingNone)
	if got, ok := nm.Physical("s.a.b"); !ok || got != "s.a.b" {
		t.Errorf("Physical = %q, %v", got, ok)
	}
	if _, ok := nm.Logical("col-1"); ok {
		t.Error("physical names must not resolve under mode none")
	}
	if _, ok := nm.FieldID([]string{"id"}); ok {
		t.Error("no field ids under mode none")
	}
	if _, ok := nm.LogicalPathByID(1); ok {
		t.Error("no ids under mode none")
	}
	if f := s.Field("id"); f.PhysicalName(ColumnMappingNone) != "id" || f.PhysicalName(ColumnMappingName) != "col-1" {
		t.Errorf("PhysicalName: %q / %q", f.PhysicalName(ColumnMappingNone), f.PhysicalName(ColumnMappingName))
	}
	if id, ok := s.Field("m").FieldID(); !ok || id != 6 {
		t.Errorf("FieldID() = %d, %v", id, ok)
	}
}

// TestNameMapIcebergCompatFixture checks nested ids against a Spark-written
// icebergCompatV2 table.
func TestNameMapIcebergCompatFixture(t *testing.T) {
	dir := testenv.Fixture(t, "delta/golden-table-with-icebegCompatV2Enabled")
	acts := readCommitLenient(t, filepath.Join(dir, "_delta_log", "00000000000000000000.json"))
	var md *Metadata
	for _, a := range acts {
		if a.MetaData != nil {
			md = a.MetaData
		}
	}
	if md == nil {
		t.Fatal("no metaData in commit 0")
	}
	s, err := md.Schema()
	if err != nil {
		t.Fatal(err)
	}
	nm := NewNameMap(s, md.ColumnMapping())
	for path, want := range map[string]int64{
		"array_of_prims.element": 31, "array_of_arrays.element.element": 33,
		"array_of_map_of_arrays.element.value.element": 37, "map_of_maps.value.key": 52,
		"nested_struct.ac.aca": 16,
	} {
		if got, ok := nm.FieldID(strings.Split(path, ".")); !ok || got != want {
			t.Errorf("FieldID(%s) = %d, %v; want %d", path, got, ok, want)
		}
	}
}

// TestColumnMappingForProtocol: PROTOCOL.md "Column Mapping": the mode is
// honoured only when the protocol supports the columnMapping feature.
func TestColumnMappingForProtocol(t *testing.T) {
	m := &Metadata{Configuration: map[string]string{"delta.columnMapping.mode": "name"}}
	for _, tc := range []struct {
		p    *Protocol
		want ColumnMappingMode
	}{
		{&Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, ColumnMappingNone},
		{&Protocol{MinReaderVersion: 1, MinWriterVersion: 5}, ColumnMappingNone}, // reader 2 is required
		{&Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, ColumnMappingName},
		{&Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping"}, WriterFeatures: []string{"columnMapping"}}, ColumnMappingName},
		{&Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{}, WriterFeatures: []string{"domainMetadata"}}, ColumnMappingNone},
	} {
		if got := ColumnMappingFor(tc.p, m); got != tc.want {
			t.Errorf("ColumnMappingFor(%+v) = %s, want %s", *tc.p, got, tc.want)
		}
	}
}
