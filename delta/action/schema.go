package action

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// DataType is a Delta schema type: PrimitiveType, DecimalType, *StructType,
// *ArrayType or *MapType. String returns a compact human-readable form
// (e.g. "struct<a:long,b:array<string>>"); MarshalJSON returns the form of
// the Delta schemaString.
type DataType interface {
	String() string
}

// PrimitiveType is a non-nested, non-decimal type named as in the Delta
// schema JSON: string, long, integer, short, byte, float, double, boolean,
// binary, date, timestamp, timestamp_ntz, variant, void. Names this package
// does not know (e.g. "geometry(OGC:CRS84)") are kept verbatim so that a
// schema always parses; gating such tables is the protocol check's job.
type PrimitiveType struct {
	Name string
}

// String returns the type name.
func (p PrimitiveType) String() string { return p.Name }

// MarshalJSON encodes the type as its JSON string name.
func (p PrimitiveType) MarshalJSON() ([]byte, error) { return json.Marshal(p.Name) }

// DecimalType is decimal(Precision,Scale).
type DecimalType struct {
	Precision, Scale int
}

// String returns "decimal(p,s)", the schema JSON spelling.
func (d DecimalType) String() string { return fmt.Sprintf("decimal(%d,%d)", d.Precision, d.Scale) }

// MarshalJSON encodes the type as the JSON string "decimal(p,s)".
func (d DecimalType) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// StructType is a struct (and the table schema itself). Fields keep their
// schema order.
type StructType struct {
	Fields []*StructField
}

// String returns "struct<name:type,...>".
func (s *StructType) String() string {
	var b strings.Builder
	b.WriteString("struct<")
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.Name)
		b.WriteByte(':')
		b.WriteString(TypeString(f.Type))
	}
	b.WriteByte('>')
	return b.String()
}

// Field returns the field with exactly this name, or nil.
func (s *StructType) Field(name string) *StructField {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// MarshalJSON encodes the struct in the Delta schemaString form; ParseSchema
// of the result yields an equal StructType.
func (s *StructType) MarshalJSON() ([]byte, error) {
	fields := s.Fields
	if fields == nil {
		fields = []*StructField{}
	}
	return json.Marshal(struct {
		Type   string         `json:"type"`
		Fields []*StructField `json:"fields"`
	}{"struct", fields})
}

// UnmarshalJSON decodes a schemaString-form struct (see ParseSchema).
func (s *StructType) UnmarshalJSON(data []byte) error {
	t, err := ParseSchema(string(data))
	if err != nil {
		return err
	}
	*s = *t
	return nil
}

// ArrayType is array<ElementType>.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

// String returns "array<element>".
func (a *ArrayType) String() string { return "array<" + TypeString(a.ElementType) + ">" }

// MarshalJSON encodes the array type in the Delta schema JSON form.
func (a *ArrayType) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type         string   `json:"type"`
		ElementType  DataType `json:"elementType"`
		ContainsNull bool     `json:"containsNull"`
	}{"array", a.ElementType, a.ContainsNull})
}

// MapType is map<KeyType,ValueType>.
type MapType struct {
	KeyType, ValueType DataType
	ValueContainsNull  bool
}

// String returns "map<key,value>".
func (m *MapType) String() string {
	return "map<" + TypeString(m.KeyType) + "," + TypeString(m.ValueType) + ">"
}

// MarshalJSON encodes the map type in the Delta schema JSON form.
func (m *MapType) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type              string   `json:"type"`
		KeyType           DataType `json:"keyType"`
		ValueType         DataType `json:"valueType"`
		ValueContainsNull bool     `json:"valueContainsNull"`
	}{"map", m.KeyType, m.ValueType, m.ValueContainsNull})
}

// Column mapping metadata keys [§Column Mapping].
const (
	metaColumnMappingID     = "delta.columnMapping.id"
	metaPhysicalName        = "delta.columnMapping.physicalName"
	metaNestedIDs           = "delta.columnMapping.nested.ids"
	configColumnMapping     = "delta.columnMapping.mode"
	defaultDecimalPrecision = 10 // Spark's DecimalType.USER_DEFAULT for a bare "decimal"
)

// StructField is one field of a struct. Metadata holds the field metadata
// as decoded JSON; numbers are json.Number so that ids and high-water marks
// keep their exact value and re-encode unchanged.
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	Metadata map[string]any
}

// PhysicalName returns the name this field has in data files, stats and
// partitionValues: the delta.columnMapping.physicalName metadata under name
// or id mode (falling back to Name when absent, as Spark does), else Name.
func (f *StructField) PhysicalName(mode ColumnMappingMode) string {
	if mode == ColumnMappingNone || mode == "" {
		return f.Name
	}
	if s, ok := f.Metadata[metaPhysicalName].(string); ok && s != "" {
		return s
	}
	return f.Name
}

// FieldID returns the delta.columnMapping.id metadata (the Parquet field_id
// of the column) and whether it is present and an integer.
func (f *StructField) FieldID() (int64, bool) {
	return metaInt(f.Metadata[metaColumnMappingID])
}

// NestedFieldID returns the Parquet field_id of a nested component of the
// field (an array's element, a map's key or value) from its
// delta.columnMapping.nested.ids metadata, keyed "<physical name>.<path>"
// (e.g. "col-1.element.value"); ok is false when it is absent.
func (f *StructField) NestedFieldID(key string) (int64, bool) {
	ids, ok := f.Metadata[metaNestedIDs].(map[string]any)
	if !ok {
		return 0, false
	}
	return metaInt(ids[key])
}

// MarshalJSON encodes the field as {"name","type","nullable","metadata"};
// nil metadata is written as {} as Spark does.
func (f *StructField) MarshalJSON() ([]byte, error) {
	md := f.Metadata
	if md == nil {
		md = map[string]any{}
	}
	return json.Marshal(struct {
		Name     string         `json:"name"`
		Type     DataType       `json:"type"`
		Nullable bool           `json:"nullable"`
		Metadata map[string]any `json:"metadata"`
	}{f.Name, f.Type, f.Nullable, md})
}

// metaInt converts a decoded JSON number (json.Number, float64 or an int
// kind) to int64.
func metaInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

// TypeString is t.String(), and "<nil>" for a nil type.
func TypeString(t DataType) string {
	if t == nil {
		return "<nil>"
	}
	return t.String()
}

// ParseSchema decodes a Delta schemaString: a JSON struct type whose fields
// have name, type, nullable (default true when absent) and metadata.
// Unknown primitive type names are kept as PrimitiveType; a malformed
// document or an unknown complex type ("type" object other than struct,
// array or map) is an error wrapping ErrCorruptLog.
func ParseSchema(schemaString string) (*StructType, error) {
	var raw json.RawMessage
	if err := decodeNumbers([]byte(schemaString), &raw); err != nil {
		return nil, corruptf("schema: %v", err)
	}
	t, err := parseType(raw)
	if err != nil {
		return nil, corruptf("schema: %v", err)
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, corruptf("schema: top level is %s, not a struct", t)
	}
	return st, nil
}

// decodeNumbers unmarshals data into v keeping numbers as json.Number and
// refusing trailing data.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

type rawType struct {
	Type              string            `json:"type"`
	Fields            []json.RawMessage `json:"fields"`
	ElementType       json.RawMessage   `json:"elementType"`
	ContainsNull      *bool             `json:"containsNull"`
	KeyType           json.RawMessage   `json:"keyType"`
	ValueType         json.RawMessage   `json:"valueType"`
	ValueContainsNull *bool             `json:"valueContainsNull"`
}

type rawField struct {
	Name     *string         `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable *bool           `json:"nullable"`
	Metadata json.RawMessage `json:"metadata"`
}

// parseType decodes one type: a JSON string (primitive or decimal) or an
// object (struct, array, map).
func parseType(raw json.RawMessage) (DataType, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("missing type")
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, err
		}
		return parsePrimitive(name)
	}
	var rt rawType
	if err := json.Unmarshal(raw, &rt); err != nil {
		return nil, err
	}
	switch rt.Type {
	case "struct":
		return parseStruct(rt.Fields)
	case "array":
		elem, err := parseType(rt.ElementType)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return &ArrayType{ElementType: elem, ContainsNull: boolOr(rt.ContainsNull, true)}, nil
	case "map":
		k, err := parseType(rt.KeyType)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		v, err := parseType(rt.ValueType)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return &MapType{KeyType: k, ValueType: v, ValueContainsNull: boolOr(rt.ValueContainsNull, true)}, nil
	}
	return nil, fmt.Errorf("unknown complex type %q", rt.Type)
}

func parseStruct(fields []json.RawMessage) (*StructType, error) {
	st := &StructType{Fields: make([]*StructField, 0, len(fields))}
	for i, fr := range fields {
		var rf rawField
		if err := json.Unmarshal(fr, &rf); err != nil {
			return nil, fmt.Errorf("field %d: %w", i, err)
		}
		if rf.Name == nil {
			return nil, fmt.Errorf("field %d: no name", i)
		}
		t, err := parseType(rf.Type)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", *rf.Name, err)
		}
		f := &StructField{Name: *rf.Name, Type: t, Nullable: boolOr(rf.Nullable, true)}
		if len(rf.Metadata) > 0 && string(rf.Metadata) != "null" {
			if err := decodeNumbers(rf.Metadata, &f.Metadata); err != nil {
				return nil, fmt.Errorf("field %q metadata: %w", *rf.Name, err)
			}
		}
		st.Fields = append(st.Fields, f)
	}
	return st, nil
}

// parsePrimitive maps a type name to PrimitiveType or DecimalType.
func parsePrimitive(name string) (DataType, error) {
	if name == "decimal" {
		return DecimalType{Precision: defaultDecimalPrecision, Scale: 0}, nil
	}
	if rest, ok := strings.CutPrefix(name, "decimal("); ok {
		ps, ok := strings.CutSuffix(rest, ")")
		p, s, ok2 := strings.Cut(ps, ",")
		if !ok || !ok2 {
			return nil, fmt.Errorf("bad decimal type %q", name)
		}
		prec, err1 := strconv.Atoi(strings.TrimSpace(p))
		scale, err2 := strconv.Atoi(strings.TrimSpace(s))
		if err1 != nil || err2 != nil || prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return nil, fmt.Errorf("bad decimal type %q", name)
		}
		return DecimalType{Precision: prec, Scale: scale}, nil
	}
	if name == "" {
		return nil, fmt.Errorf("empty type name")
	}
	return PrimitiveType{Name: name}, nil
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// ColumnMappingMode is the delta.columnMapping.mode table property.
type ColumnMappingMode string

// Column mapping modes [§Column Mapping].
const (
	ColumnMappingNone ColumnMappingMode = "none"
	ColumnMappingName ColumnMappingMode = "name"
	ColumnMappingID   ColumnMappingMode = "id"
)

// Valid reports whether m is one of none, name, id.
func (m ColumnMappingMode) Valid() bool {
	return m == ColumnMappingNone || m == ColumnMappingName || m == ColumnMappingID
}

// ColumnMapping returns the table's column mapping mode, lower-cased as Spark
// reads it; ColumnMappingNone when the property is absent or empty. The
// result may be an unknown mode (check Valid; CheckReadable refuses it).
func (m *Metadata) ColumnMapping() ColumnMappingMode {
	v := strings.ToLower(strings.TrimSpace(m.Configuration[configColumnMapping]))
	if v == "" {
		return ColumnMappingNone
	}
	return ColumnMappingMode(v)
}

// ColumnMappingFor returns the column mapping mode a table with protocol p
// and metadata m has: m's delta.columnMapping.mode when the protocol
// supports the columnMapping feature (reader version 2 with writer 5 or 6,
// or the feature listed for readers and writers at 3/7), else
// ColumnMappingNone. PROTOCOL.md "Column Mapping": the property "should
// only be honored if the table's protocol has the reader and writer
// versions and/or table features that support the columnMapping table
// feature"; files of such a table carry logical names, which a reader
// honouring the property would read as missing (NULL) columns. An unknown
// mode is returned as it is (CheckReadable refuses it either way).
func ColumnMappingFor(p *Protocol, m *Metadata) ColumnMappingMode {
	mode := m.ColumnMapping()
	if mode.Valid() && !(p.HasReaderFeature("columnMapping") && p.HasWriterFeature("columnMapping")) {
		return ColumnMappingNone
	}
	return mode
}

// Schema parses SchemaString (see ParseSchema). Errors wrap ErrCorruptLog.
func (m *Metadata) Schema() (*StructType, error) {
	if m.SchemaString == "" {
		return nil, corruptf("metaData has no schemaString")
	}
	return ParseSchema(m.SchemaString)
}

// PartitionSchema returns the top-level schema fields of the partition
// columns, in PartitionColumns order. A partition column is matched to a
// field by exact name, else case-insensitively (Spark column names are
// case-insensitive); a column with no unique match is an error wrapping
// ErrCorruptLog.
func (m *Metadata) PartitionSchema() ([]*StructField, error) {
	schema, err := m.Schema()
	if err != nil {
		return nil, err
	}
	out := make([]*StructField, 0, len(m.PartitionColumns))
	for _, col := range m.PartitionColumns {
		f := schema.Field(col)
		if f == nil {
			f = fieldFold(schema, col)
		}
		if f == nil {
			return nil, corruptf("partition column %q is not a unique top-level schema field", col)
		}
		out = append(out, f)
	}
	return out, nil
}

// fieldFold finds the single field whose name equals name case-insensitively.
func fieldFold(s *StructType, name string) *StructField {
	var found *StructField
	for _, f := range s.Fields {
		if strings.EqualFold(f.Name, name) {
			if found != nil {
				return nil
			}
			found = f
		}
	}
	return found
}
