package writeback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/delta"
)

// Domains and table properties of the writer features handled here.
const (
	domainRowTracking     = "delta.rowTracking"
	domainClustering      = "delta.clustering"
	configRowTrackingSusp = "delta.rowTrackingSuspended"
)

// rowTrackingActive: when the rowTracking feature is supported (and not
// suspended), every add must carry row ids [§Row Tracking].
func rowTrackingActive(snap *delta.Snapshot) bool {
	if !snap.Protocol().HasWriterFeature("rowTracking") {
		return false
	}
	return !strings.EqualFold(strings.TrimSpace(snap.Metadata().Configuration[configRowTrackingSusp]), "true")
}

// rowIDHighWaterMark returns the delta.rowTracking domain's
// rowIdHighWaterMark, -1 when the domain is absent (no ids assigned yet).
func rowIDHighWaterMark(snap *delta.Snapshot) (int64, error) {
	d, ok := snap.Domain(domainRowTracking)
	if !ok || d.Removed {
		return -1, nil
	}
	var cfg struct {
		HWM *json.Number `json:"rowIdHighWaterMark"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(d.Configuration)))
	dec.UseNumber()
	if err := dec.Decode(&cfg); err != nil || cfg.HWM == nil {
		return 0, fmt.Errorf("%w: table %s version %d: bad %s domain configuration %q",
			delta.ErrCorruptLog, snap.Table(), snap.Version(), domainRowTracking, d.Configuration)
	}
	n, err := cfg.HWM.Int64()
	if err != nil {
		return 0, fmt.Errorf("%w: table %s version %d: bad rowIdHighWaterMark %q",
			delta.ErrCorruptLog, snap.Table(), snap.Version(), cfg.HWM.String())
	}
	return n, nil
}

// rowTrackingDomain is the domainMetadata action recording a new mark.
func rowTrackingDomain(hwm int64) *delta.DomainMetadata {
	return &delta.DomainMetadata{
		Domain:        domainRowTracking,
		Configuration: `{"rowIdHighWaterMark":` + strconv.FormatInt(hwm, 10) + `}`,
	}
}

// clusteringColumns maps the lower-cased dotted logical paths of the
// table's clustering columns to their physical paths, so that they always
// get statistics [§Clustered Table]. The domain is read only when the
// protocol supports the clustering feature; then its configuration must
// be one of the two forms in use, each naming columns of the schema:
// PROTOCOL.md's example, {"clusteringColumns":["c1","c2"]} (each string one
// top-level physical name), or Spark's, {"clusteringColumns":[["c1"],
// ["s","a"]]} (each a physical path). Anything else is refused: columns
// ignored would lose the statistics the feature requires.
func clusteringColumns(snap *delta.Snapshot, schema *delta.StructType) (map[string][]string, error) {
	out := map[string][]string{}
	d, ok := snap.Domain(domainClustering)
	if !ok || d.Removed || !snap.Protocol().HasWriterFeature("clustering") {
		return out, nil
	}
	paths, err := clusteringPaths(d.Configuration)
	if err != nil {
		return nil, fmt.Errorf("%s domain configuration %q: %w", domainClustering, d.Configuration, err)
	}
	nm := delta.NewNameMap(schema, snap.ColumnMapping())
	for _, phys := range paths {
		logical, ok := nm.LogicalPath(phys)
		if !ok {
			return nil, fmt.Errorf("%s domain names clustering column %s, which is not in the table schema", domainClustering, strings.Join(phys, "."))
		}
		out[strings.ToLower(dotted(logical))] = phys
	}
	return out, nil
}

// clusteringPaths decodes the clusteringColumns list in either form.
func clusteringPaths(conf string) ([][]string, error) {
	var cfg struct {
		Columns []json.RawMessage `json:"clusteringColumns"`
	}
	dec := json.NewDecoder(strings.NewReader(conf))
	if err := dec.Decode(&cfg); err != nil || cfg.Columns == nil {
		return nil, fmt.Errorf("want {\"clusteringColumns\": [...]}")
	}
	var out [][]string
	for _, raw := range cfg.Columns {
		var name string
		var path []string
		switch {
		case json.Unmarshal(raw, &name) == nil && name != "":
			path = []string{name}
		case json.Unmarshal(raw, &path) == nil && len(path) > 0 && !slices.Contains(path, ""):
		default:
			return nil, fmt.Errorf("entry %s is neither a column name nor a path of names", raw)
		}
		out = append(out, path)
	}
	return out, nil
}

// checkFieldIDs refuses an id-mode schema with a field that has no
// delta.columnMapping.id: under id mode a reader matches columns by
// Parquet field_id [§Column Mapping], so a file written without one would
// read as NULL columns. Other modes need no ids.
func checkFieldIDs(mode delta.ColumnMappingMode, st *delta.StructType, path []string) error {
	if mode != delta.ColumnMappingID {
		return nil
	}
	for _, f := range st.Fields {
		fp := appendPath(path, f.Name)
		if _, ok := f.FieldID(); !ok {
			return fmt.Errorf("column mapping mode id, but column %s has no delta.columnMapping.id", dotted(fp))
		}
		for _, inner := range nestedStructs(f.Type) {
			if err := checkFieldIDs(mode, inner, fp); err != nil {
				return err
			}
		}
	}
	return nil
}

// nestedStructs lists the structs directly inside t (itself, or the
// element, key or value types of arrays and maps, recursively).
func nestedStructs(t delta.DataType) []*delta.StructType {
	switch t := t.(type) {
	case *delta.StructType:
		return []*delta.StructType{t}
	case *delta.ArrayType:
		return nestedStructs(t.ElementType)
	case *delta.MapType:
		return append(nestedStructs(t.KeyType), nestedStructs(t.ValueType)...)
	}
	return nil
}
