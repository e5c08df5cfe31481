package checkpoint

// The typed stats_parsed and partitionValues_parsed columns a table asks
// for with delta.checkpoint.writeStatsAsStruct: a row type built per
// table schema (column mapping applied) and filled from each add.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/parquet-go/parquet-go"
)

// Table properties that choose how a checkpoint carries each add's stats
// [§Checkpoint Format]: the stats JSON string (default on), and the typed
// stats_parsed and partitionValues_parsed columns (default off).
const (
	configStatsAsJSON   = "delta.checkpoint.writeStatsAsJson"
	configStatsAsStruct = "delta.checkpoint.writeStatsAsStruct"
)

// checkpointStatsForm reads the two properties.
func checkpointStatsForm(m *action.Metadata) (asJSON, asStruct bool) {
	asJSON = !strings.EqualFold(strings.TrimSpace(m.Configuration[configStatsAsJSON]), "false")
	asStruct = strings.EqualFold(strings.TrimSpace(m.Configuration[configStatsAsStruct]), "true")
	return asJSON, asStruct
}

// parsedField is one field of a typed column built for the table: its Go
// struct field (for reflect.StructOf), the physical name it is read from,
// and how to set it from a JSON value (leaf) or its children (struct).
type parsedField struct {
	sf       reflect.StructField
	name     string
	set      func(dst reflect.Value, v any) bool // leaf: dst is the *T field
	children []parsedField
	typ      reflect.Type // the struct type of a group, nil for a leaf
}

// parsedLeafType gives the Go type and parquet tag options of a Delta
// primitive in a typed stats or partition column, nil when it has none
// (binary, boolean bounds, variant, decimals over 18 digits).
func parsedLeafType(t action.DataType, bounds bool) (reflect.Type, string, func(reflect.Value, any) bool) {
	if d, ok := t.(action.DecimalType); ok {
		if d.Precision > 18 {
			return nil, "", nil
		}
		narrow := d.Precision <= 9 // INT32 as Spark writes it, else INT64
		scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
		set := func(dst reflect.Value, v any) bool {
			r, ok := new(big.Rat).SetString(jsonText(v))
			if !ok {
				return false
			}
			r.Mul(r, scale)
			if !r.IsInt() || !r.Num().IsInt64() {
				return false
			}
			if narrow {
				return setPtr(dst, int32(r.Num().Int64()))
			}
			return setPtr(dst, r.Num().Int64())
		}
		tag := ",decimal(" + strconv.Itoa(d.Scale) + ":" + strconv.Itoa(d.Precision) + ")"
		if narrow {
			return reflect.TypeFor[*int32](), tag, set
		}
		return reflect.TypeFor[*int64](), tag, set
	}
	p, ok := t.(action.PrimitiveType)
	if !ok {
		return nil, "", nil
	}
	intSet := func(bits int, conv func(int64) any) func(reflect.Value, any) bool {
		return func(dst reflect.Value, v any) bool {
			n, err := strconv.ParseInt(jsonText(v), 10, bits)
			return err == nil && setPtr(dst, conv(n))
		}
	}
	switch p.Name {
	case "long":
		return reflect.TypeFor[*int64](), "", intSet(64, func(n int64) any { return n })
	case "integer":
		return reflect.TypeFor[*int32](), "", intSet(32, func(n int64) any { return int32(n) })
	case "short":
		return reflect.TypeFor[*int16](), "", intSet(16, func(n int64) any { return int16(n) })
	case "byte":
		return reflect.TypeFor[*int8](), "", intSet(8, func(n int64) any { return int8(n) })
	case "double", "float":
		set := func(dst reflect.Value, v any) bool {
			f, err := strconv.ParseFloat(jsonText(v), 64)
			if err != nil {
				return false
			}
			if p.Name == "float" {
				return setPtr(dst, float32(f))
			}
			return setPtr(dst, f)
		}
		if p.Name == "float" {
			return reflect.TypeFor[*float32](), "", set
		}
		return reflect.TypeFor[*float64](), "", set
	case "string":
		return reflect.TypeFor[*string](), "", func(dst reflect.Value, v any) bool { return setPtr(dst, jsonText(v)) }
	case "date":
		return reflect.TypeFor[*int32](), ",date", func(dst reflect.Value, v any) bool {
			d, err := time.Parse("2006-01-02", jsonText(v))
			return err == nil && setPtr(dst, int32(d.Unix()/86400))
		}
	case "timestamp", "timestamp_ntz":
		tag := ",timestamp(microsecond:utc)"
		if p.Name == "timestamp_ntz" {
			tag = ",timestamp(microsecond:local)"
		}
		return reflect.TypeFor[*int64](), tag, func(dst reflect.Value, v any) bool {
			ts, err := parseStatsTime(jsonText(v))
			return err == nil && setPtr(dst, ts.UnixMicro())
		}
	case "boolean":
		if bounds {
			return nil, "", nil
		}
		return reflect.TypeFor[*bool](), "", func(dst reflect.Value, v any) bool {
			b, err := strconv.ParseBool(jsonText(v))
			return err == nil && setPtr(dst, b)
		}
	}
	return nil, "", nil
}

// parseStatsTime reads a stats or partition timestamp (with an offset, or
// without one for timestamp_ntz and partition values).
func parseStatsTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Parse("2006-01-02 15:04:05.999999999Z07:00", s)
}

func jsonText(v any) string {
	switch v := v.(type) {
	case json.Number:
		return v.String()
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

func setPtr(dst reflect.Value, v any) bool {
	p := reflect.New(dst.Type().Elem())
	p.Elem().Set(reflect.ValueOf(v))
	dst.Set(p)
	return true
}

// tagSafe: a name that fits a parquet struct tag.
func tagSafe(name string) bool { return name != "" && !strings.ContainsAny(name, ",`\"") }

// boundFields builds the typed fields mirroring st for minValues/maxValues
// (bounds) or nullCount (counts: every leaf a long), by physical name.
func boundFields(st *action.StructType, mode action.ColumnMappingMode, bounds bool) []parsedField {
	var out []parsedField
	for _, f := range st.Fields {
		name := f.PhysicalName(mode)
		if !tagSafe(name) {
			continue
		}
		goName := "F" + strconv.Itoa(len(out))
		if inner, ok := f.Type.(*action.StructType); ok {
			kids := boundFields(inner, mode, bounds)
			if len(kids) == 0 {
				continue
			}
			out = append(out, groupField(goName, name, kids))
			continue
		}
		var typ reflect.Type
		var opts string
		var set func(reflect.Value, any) bool
		if bounds {
			typ, opts, set = parsedLeafType(f.Type, true)
		} else {
			typ, set = reflect.TypeFor[*int64](), func(dst reflect.Value, v any) bool {
				n, err := strconv.ParseInt(jsonText(v), 10, 64)
				return err == nil && setPtr(dst, n)
			}
		}
		if typ == nil {
			continue
		}
		out = append(out, parsedField{name: name, set: set,
			sf: reflect.StructField{Name: goName, Type: typ, Tag: reflect.StructTag(`parquet:"` + name + `,optional` + opts + `"`)}})
	}
	return out
}

func groupField(goName, name string, kids []parsedField) parsedField {
	sfs := make([]reflect.StructField, len(kids))
	for i, k := range kids {
		sfs[i] = k.sf
	}
	typ := reflect.StructOf(sfs)
	return parsedField{name: name, children: kids, typ: typ,
		sf: reflect.StructField{Name: goName, Type: reflect.PointerTo(typ), Tag: reflect.StructTag(`parquet:"` + name + `,optional"`)}}
}

// fill sets the fields of the struct pointer dst from the JSON object m;
// it reports whether any field was set (else dst stays nil).
func fillGroup(dst reflect.Value, kids []parsedField, typ reflect.Type, m map[string]any) bool {
	v := reflect.New(typ)
	set := false
	for i, k := range kids {
		val, ok := m[k.name]
		if !ok || val == nil {
			continue
		}
		if k.children != nil {
			inner, ok := val.(map[string]any)
			set = ok && fillGroup(v.Elem().Field(i), k.children, k.typ, inner) || set
			continue
		}
		set = k.set(v.Elem().Field(i), val) || set
	}
	if set {
		dst.Set(v)
	}
	return set
}

// parsedLayout is the typed stats_parsed and partitionValues_parsed
// columns of one table's checkpoint.
type parsedLayout struct {
	stats, part parsedField // part.typ nil when the table is unpartitioned
}

// newParsedLayout builds the columns for the snapshot's schema.
func newParsedLayout(m *action.Metadata) (*parsedLayout, error) {
	schema, err := m.Schema()
	if err != nil {
		return nil, err
	}
	parts, err := m.PartitionSchema()
	if err != nil {
		return nil, err
	}
	mode := m.ColumnMapping()
	isPart := map[string]bool{}
	var partFields []parsedField
	for _, f := range parts {
		isPart[strings.ToLower(f.Name)] = true
		name := f.PhysicalName(mode)
		typ, opts, set := parsedLeafType(f.Type, false)
		if typ == nil || !tagSafe(name) {
			continue
		}
		partFields = append(partFields, parsedField{name: name, set: set, sf: reflect.StructField{
			Name: "F" + strconv.Itoa(len(partFields)), Type: typ, Tag: reflect.StructTag(`parquet:"` + name + `,optional` + opts + `"`)}})
	}
	data := &action.StructType{}
	for _, f := range schema.Fields {
		if !isPart[strings.ToLower(f.Name)] {
			data.Fields = append(data.Fields, f)
		}
	}
	num := parsedField{name: "numRecords", set: func(dst reflect.Value, v any) bool {
		n, err := strconv.ParseInt(jsonText(v), 10, 64)
		return err == nil && setPtr(dst, n)
	}, sf: reflect.StructField{Name: "NumRecords", Type: reflect.TypeFor[*int64](), Tag: `parquet:"numRecords,optional"`}}
	kids := []parsedField{num}
	for _, g := range []struct {
		goName, name string
		bounds       bool
	}{{"MinValues", "minValues", true}, {"MaxValues", "maxValues", true}, {"NullCount", "nullCount", false}} {
		if fs := boundFields(data, mode, g.bounds); len(fs) > 0 {
			kids = append(kids, groupField(g.goName, g.name, fs))
		}
	}
	tight := parsedField{name: "tightBounds", set: func(dst reflect.Value, v any) bool {
		b, ok := v.(bool)
		return ok && setPtr(dst, b)
	}, sf: reflect.StructField{Name: "TightBounds", Type: reflect.TypeFor[*bool](), Tag: `parquet:"tightBounds,optional"`}}
	kids = append(kids, tight)
	l := &parsedLayout{stats: groupField("StatsParsed", "stats_parsed", kids)}
	if len(partFields) > 0 {
		l.part = groupField("PartitionValuesParsed", "partitionValues_parsed", partFields)
	}
	return l, nil
}

// addType is cpwAdd with the typed columns appended, and without the
// stats JSON column unless asJSON.
func (l *parsedLayout) addType(asJSON bool) reflect.Type {
	base := reflect.TypeFor[cpwAdd]()
	var sfs []reflect.StructField
	for i := range base.NumField() {
		if f := base.Field(i); asJSON || f.Name != "Stats" {
			sfs = append(sfs, f)
		}
	}
	sfs = append(sfs, l.stats.sf)
	if l.part.typ != nil {
		sfs = append(sfs, l.part.sf)
	}
	return reflect.StructOf(sfs)
}

// fillAdd sets the typed columns of the dynamic add value dst (a struct of
// addType) from the add's stats JSON and partition values.
func (l *parsedLayout) fillAdd(dst reflect.Value, a *cpwAdd) {
	stats, part := dst.FieldByName("StatsParsed"), dst.FieldByName("PartitionValuesParsed")
	if a.Stats != nil {
		dec := json.NewDecoder(bytes.NewReader([]byte(*a.Stats)))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) == nil {
			fillGroup(stats, l.stats.children, l.stats.typ, m)
		}
	}
	if l.part.typ != nil && len(a.PartitionValues) > 0 {
		m := map[string]any{}
		for k, v := range a.PartitionValues {
			if v != nil && *v != "" {
				m[k] = *v
			}
		}
		fillGroup(part, l.part.children, l.part.typ, m)
	}
}

// writeCheckpointParsed writes st's checkpoint with the typed columns in
// each add (writeStatsAsStruct), the row type built for the table; the
// JSON stats are kept only when asJSON. v2 adds the checkpointMetadata
// row of a V2-spec checkpoint first.
func writeCheckpointParsed(w io.Writer, st *State, l *parsedLayout, asJSON, v2 bool) (int64, error) {
	addT := l.addType(asJSON)
	base := reflect.TypeFor[cpwRow]()
	var sfs []reflect.StructField
	for i := range base.NumField() {
		f := base.Field(i)
		if f.Name == "Add" {
			f.Type = reflect.PointerTo(addT)
		} else {
			f.Type = reflect.PointerTo(plainLists(f.Type.Elem()))
		}
		sfs = append(sfs, f)
	}
	if v2 {
		cm, _ := reflect.TypeFor[cpwRowV2]().FieldByName("CheckpointMetadata")
		sfs = append(sfs, cm)
	}
	rowT := reflect.StructOf(sfs)
	schema := parquet.NewSchema("spark_schema", parquet.SchemaOf(reflect.New(rowT).Interface()))
	opts, err := writerOptions(st.Metadata)
	if err != nil {
		return 0, err
	}
	pw := parquet.NewWriter(w, append(opts, schema, parquet.MaxRowsPerRowGroup(RowGroupRows))...)
	total := int64(0)
	write := func(r cpwRow, cm *cpwCheckpointMetadata) error {
		row := reflect.New(rowT).Elem()
		src := reflect.ValueOf(r)
		for i := range base.NumField() {
			if base.Field(i).Name != "Add" && !src.Field(i).IsNil() {
				row.Field(i).Set(copyPlain(src.Field(i).Elem(), row.Field(i).Type().Elem()).Addr())
			}
		}
		if r.Add != nil {
			add := reflect.New(addT)
			av := reflect.ValueOf(*r.Add)
			for i := range av.NumField() {
				if f := add.Elem().FieldByName(av.Type().Field(i).Name); f.IsValid() {
					f.Set(av.Field(i))
				}
			}
			l.fillAdd(add.Elem(), r.Add)
			row.FieldByName("Add").Set(add)
		}
		if cm != nil {
			row.FieldByName("CheckpointMetadata").Set(reflect.ValueOf(cm))
		}
		total++
		return pw.Write(row.Addr().Interface())
	}
	if v2 {
		v := st.Version
		err = write(cpwRow{}, &cpwCheckpointMetadata{Version: &v})
	}
	if err == nil {
		err = checkpointRows(st, func(r cpwRow) error { return write(r, nil) })
	}
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("encode parquet: %w", err)
	}
	return total, nil
}

// plainLists is struct type t with its []*string fields made []string:
// parquet-go's reflection writer cannot write lists of pointers (its
// generic writer, used for the fixed layout, can). The list elements are
// then required instead of Spark's optional, which readers accept.
func plainLists(t reflect.Type) reflect.Type {
	sfs := make([]reflect.StructField, t.NumField())
	for i := range sfs {
		sfs[i] = t.Field(i)
		if sfs[i].Type == reflect.TypeFor[[]*string]() {
			sfs[i].Type = reflect.TypeFor[[]string]()
		}
	}
	return reflect.StructOf(sfs)
}

// copyPlain copies the struct src into a new value of type to (its
// plainLists form), dereferencing the elements of []*string fields.
func copyPlain(src reflect.Value, to reflect.Type) reflect.Value {
	dst := reflect.New(to).Elem()
	for i := range src.NumField() {
		f := src.Field(i)
		if ptrs, ok := f.Interface().([]*string); ok {
			if ptrs != nil {
				plain := make([]string, len(ptrs))
				for j, p := range ptrs {
					if p != nil {
						plain[j] = *p
					}
				}
				dst.Field(i).Set(reflect.ValueOf(plain))
			}
			continue
		}
		dst.Field(i).Set(f)
	}
	return dst
}
