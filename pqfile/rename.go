package pqfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go/format"
)

// Key-value metadata entries that embed a copy of the schema with column names. After a rename
// they would name columns the file no longer has, which makes Spark read nulls.
const (
	sparkSchemaKey = "org.apache.spark.sql.parquet.row.metadata"
	arrowSchemaKey = "ARROW:schema"
)

// applyRename renames schema elements and sets field ids in meta as r asks, keeps column chunk
// path_in_schema in step, and fixes key-value metadata that embeds column names. It checks that
// every column chunk path matches its leaf. It reports whether any name changed.
func applyRename(meta *format.FileMetaData, t *SchemaTree, r *Rename) (bool, error) {
	schema := meta.Schema
	oldName := func(j int) string { return schema[j].Name }
	newNames := make([]string, len(schema))
	renamed := map[string]string{}
	changed := false
	for i := range schema {
		newNames[i] = schema[i].Name
		if i == 0 || r == nil {
			continue
		}
		p := t.path(i, oldName)
		if r.Name != nil {
			if n, ok := r.Name(p); ok && n != schema[i].Name {
				if n == "" {
					return false, fmt.Errorf("%w: empty new name for column %q", ErrInvalidArgument, p)
				}
				newNames[i], changed = n, true
				renamed[schema[i].Name] = n
			}
		}
		if r.FieldID != nil {
			if id, ok := r.FieldID(p); ok {
				schema[i].FieldID = id
			}
		}
	}
	if err := checkSiblings(t, newNames); err != nil {
		return false, err
	}
	if err := renameChunks(meta, t, newNames); err != nil {
		return false, err
	}
	for i := range schema {
		schema[i].Name = newNames[i]
	}
	if changed {
		meta.KeyValueMetadata = renameKeyValues(meta.KeyValueMetadata, renamed, schema, newNames)
	}
	return changed, nil
}

// checkSiblings refuses two children of one group with the same (new) name.
func checkSiblings(t *SchemaTree, names []string) error {
	type key struct {
		parent int
		name   string
	}
	seen := make(map[key]bool, len(names))
	for i := 1; i < len(names); i++ {
		k := key{t.Nodes[i].Parent, names[i]}
		if seen[k] {
			return fmt.Errorf("%w: duplicate column name %q", ErrInvalidArgument, names[i])
		}
		seen[k] = true
	}
	return nil
}

// renameChunks checks each column chunk's path_in_schema against its leaf and sets the new path.
func renameChunks(meta *format.FileMetaData, t *SchemaTree, newNames []string) error {
	oldPaths := make([][]string, len(t.Leaves))
	newPaths := make([][]string, len(t.Leaves))
	for k, leaf := range t.Leaves {
		oldPaths[k] = t.path(leaf, func(j int) string { return meta.Schema[j].Name })
		newPaths[k] = t.path(leaf, func(j int) string { return newNames[j] })
	}
	for i := range meta.RowGroups {
		cols := meta.RowGroups[i].Columns
		if len(cols) != len(t.Leaves) {
			return fmt.Errorf("%w: row group %d has %d column chunks for %d leaf columns",
				ErrCorrupt, i, len(cols), len(t.Leaves))
		}
		for k := range cols {
			if !slices.Equal(cols[k].MetaData.PathInSchema, oldPaths[k]) {
				return fmt.Errorf("%w: row group %d column %d path %q does not match schema %q",
					ErrCorrupt, i, k, cols[k].MetaData.PathInSchema, oldPaths[k])
			}
			cols[k].MetaData.PathInSchema = slices.Clone(newPaths[k])
		}
	}
	return nil
}

// renameKeyValues returns kv with the embedded Spark schema renamed and the Arrow schema dropped
// (it is a binary flatbuffer we do not rewrite; readers fall back to the Parquet schema).
func renameKeyValues(kv []format.KeyValue, renamed map[string]string, schema []format.SchemaElement, newNames []string) []format.KeyValue {
	ambiguous := ambiguousRenames(schema, newNames, renamed)
	out := kv[:0:0]
	for _, e := range kv {
		switch e.Key {
		case arrowSchemaKey:
			continue
		case sparkSchemaKey:
			v, ok := renameSparkSchema(e.Value, renamed)
			if ambiguous || !ok {
				continue
			}
			e.Value = v
		}
		out = append(out, e)
	}
	return out
}

// ambiguousRenames reports whether one old name is renamed differently in two places, or kept in
// one and renamed in another, so that a by-name rewrite of an embedded schema would be wrong.
func ambiguousRenames(schema []format.SchemaElement, newNames []string, renamed map[string]string) bool {
	for i := 1; i < len(schema); i++ {
		if to, ok := renamed[schema[i].Name]; ok && to != newNames[i] {
			return true
		}
	}
	return false
}

// renameSparkSchema renames the struct fields of a Spark StructType JSON by old name. It reports
// false if the value is not JSON.
func renameSparkSchema(js string, renamed map[string]string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader([]byte(js)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	renameSparkFields(v, renamed)
	out, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(out), true
}

func renameSparkFields(v any, renamed map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if fields, ok := x["fields"].([]any); ok {
			for _, f := range fields {
				if m, ok := f.(map[string]any); ok {
					if n, ok := m["name"].(string); ok && renamed[n] != "" {
						m["name"] = renamed[n]
					}
				}
			}
		}
		for _, c := range x {
			renameSparkFields(c, renamed)
		}
	case []any:
		for _, c := range x {
			renameSparkFields(c, renamed)
		}
	}
}
