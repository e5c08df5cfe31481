package writeback

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
)

// The write-conformance matrix: one row per table feature or table
// property of PROTOCOL.md that concerns a writer. Each row builds its table
// from a version 0 written here, appends a file that must commit (then
// checks what the feature asks of the commit) and a file that must not, or
// says why the table cannot be appended to at all. A new feature adds a row.

const idSchemaField = `{"name":"id","type":"long","nullable":true,"metadata":%s}`

// idTable is a table with one nullable long column id.
func idTable(proto string, config map[string]string, idMeta string) testTable {
	if idMeta == "" {
		idMeta = "{}"
	}
	return testTable{schema: structSchema(strings.Replace(idSchemaField, "%s", idMeta, 1)), protocol: proto, config: config}
}

func writer7(features ...string) string {
	b, _ := json.Marshal(features)
	return `{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":` + string(b) + `}`
}

func readerWriter7(features ...string) string {
	b, _ := json.Marshal(features)
	return `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":` + string(b) + `,"writerFeatures":` + string(b) + `}`
}

func legacy(w int) string {
	return `{"minReaderVersion":1,"minWriterVersion":` + strconv.Itoa(w) + `}`
}

type conformanceRow struct {
	feature string
	table   testTable
	// unwritable, when set, is in the ErrNotWritable of every append (in
	// the reader's *delta.UnsupportedFeatureError when unreadable).
	unwritable string
	unreadable bool
	good       func(t *testing.T) string // a file that commits
	check      func(t *testing.T, dir string, v int64, add *delta.Add)
	bad        func(t *testing.T) string // a file that must be refused
	badWant    string                    // in its ErrInvalidFile
}

func ids(vals ...int64) func(t *testing.T) string {
	return func(t *testing.T) string {
		rows := make([]idRow, len(vals))
		for i := range vals {
			rows[i] = idRow{ID: ptr(vals[i])}
		}
		return writeParquet(t, "ids.parquet", rows)
	}
}

func wrongType(t *testing.T) string {
	return writeParquet(t, "str.parquet", []struct {
		ID *string `parquet:"id,optional"`
	}{{ID: ptr("x")}})
}

const wrongTypeWant = "column id has the wrong type"

func conformanceRows() []conformanceRow {
	invariant := `{"delta.invariants":"{\"expression\":{\"expression\":\"id > 0\"}}"}`
	rows := []conformanceRow{
		{feature: "appendOnly", table: idTable(legacy(2), map[string]string{"delta.appendOnly": "true"}, ""),
			good: ids(1), bad: wrongType, badWant: wrongTypeWant},
		{feature: "invariants", table: idTable(legacy(2), nil, invariant),
			good: ids(1, 2), bad: ids(1, 0), badWant: "invariant of column id (id > 0) violated by row 2"},
		{feature: "checkConstraints", table: idTable(legacy(3), map[string]string{"delta.constraints.pos": "id > 0"}, ""),
			good: ids(5), bad: ids(-5), badWant: "CHECK constraint pos (id > 0) violated by row 1"},
		{feature: "checkConstraints outside the subset", table: idTable(legacy(3), map[string]string{"delta.constraints.f": "abs(id) > 0"}, ""),
			unwritable: "CHECK constraint f (abs(id) > 0) is outside the SQL subset"},
		{feature: "generatedColumns", table: idTable(legacy(4), nil, `{"delta.generationExpression":"1"}`),
			unwritable: "generatedColumns (generated columns in use: column id)"},
		{feature: "allowColumnDefaults", table: idTable(writer7("allowColumnDefaults"), nil, `{"CURRENT_DEFAULT":"1"}`),
			unwritable: "allowColumnDefaults (column defaults in use: column id)"},
		{feature: "identityColumns", table: idTable(legacy(6), nil, `{"delta.identity.start":1,"delta.identity.step":1}`),
			unwritable: "identityColumns (identity columns in use: column id)"},
		{feature: "changeDataFeed", table: idTable(legacy(4), map[string]string{"delta.enableChangeDataFeed": "true"}, ""),
			good: ids(1), check: checkOnlyAdds, bad: wrongType, badWant: wrongTypeWant},
		{feature: "columnMapping", table: testTable{protocol: `{"minReaderVersion":2,"minWriterVersion":5}`,
			config: map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"},
			schema: structSchema(field("id", `"long"`, true, `{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-5f0a"}`))},
			good: ids(7), check: checkStatsKey("col-5f0a"), bad: wrongType, badWant: wrongTypeWant},
		{feature: "deletionVectors", table: idTable(readerWriter7("deletionVectors"), map[string]string{"delta.enableDeletionVectors": "true"}, ""),
			good: ids(1), check: checkNoDV, bad: wrongType, badWant: wrongTypeWant},
		{feature: "rowTracking", table: idTable(writer7("rowTracking", "domainMetadata"), map[string]string{"delta.enableRowTracking": "true"}, ""),
			good: ids(1, 2, 3), check: checkRowIDs, bad: wrongType, badWant: wrongTypeWant},
		{feature: "rowTracking without domainMetadata", table: idTable(writer7("rowTracking"), nil, ""),
			unwritable: "rowTracking without the domainMetadata feature"},
		{feature: "domainMetadata", table: idTable(writer7("domainMetadata"), nil, ""),
			good: ids(1), bad: wrongType, badWant: wrongTypeWant},
		{feature: "clustering", table: testTable{schema: structSchema(field("c", `"double"`, true, "")),
			protocol: writer7("clustering", "domainMetadata"), config: map[string]string{configNumIndexed: "0"},
			extra: []string{`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"c\"]]}","removed":false}}`}},
			good: doubles(1, 2), check: checkStatsKey("c"), bad: doubles(1, nanValue()), badWant: "clustering column c needs statistics"},
		// The clustering domain in PROTOCOL.md's own form (a list of physical names).
		{feature: "clustering, PROTOCOL.md form", table: testTable{schema: structSchema(field("c", `"double"`, true, "")),
			protocol: writer7("clustering", "domainMetadata"), config: map[string]string{configNumIndexed: "0"},
			extra: []string{`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[\"c\"]}","removed":false}}`}},
			good: doubles(1, 2), check: checkStatsKey("c"), bad: doubles(1, nanValue()), badWant: "clustering column c needs statistics"},
		{feature: "clustering, unknown form", table: testTable{schema: structSchema(field("c", `"double"`, true, "")),
			protocol: writer7("clustering", "domainMetadata"),
			extra:    []string{`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[{\"name\":\"c\"}]}","removed":false}}`}},
			unwritable: "delta.clustering domain configuration"},
		{feature: "clustering, column not in the schema", table: testTable{schema: structSchema(field("c", `"double"`, true, "")),
			protocol: writer7("clustering", "domainMetadata"),
			extra:    []string{`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"gone\"]]}","removed":false}}`}},
			unwritable: "clustering column gone, which is not in the table schema"},
		// Column mapping is honoured only when the protocol supports the feature.
		{feature: "columnMapping property, feature not supported", table: testTable{protocol: legacy(2),
			config: map[string]string{"delta.columnMapping.mode": "name"},
			schema: structSchema(field("id", `"long"`, true, `{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-5f0a"}`))},
			good: ids(7), check: checkLogicalNames("id"), bad: wrongType, badWant: wrongTypeWant},
		{feature: "columnMapping id mode without field ids", table: testTable{protocol: `{"minReaderVersion":2,"minWriterVersion":5}`,
			config: map[string]string{"delta.columnMapping.mode": "id"},
			schema: structSchema(field("id", `"long"`, true, `{"delta.columnMapping.physicalName":"col-5f0a"}`))},
			unwritable: "column mapping mode id, but column id has no delta.columnMapping.id"},
		{feature: "icebergCompatV1", table: idTable(writer7("icebergCompatV1", "columnMapping"), nil, ""), unwritable: "icebergCompatV1"},
		{feature: "icebergCompatV2", table: idTable(writer7("icebergCompatV2", "columnMapping"), nil, ""), unwritable: "icebergCompatV2"},
		{feature: "inCommitTimestamp", table: idTable(writer7("inCommitTimestamp"), map[string]string{"delta.enableInCommitTimestamps": "true"}, ""),
			good: ids(1), check: checkHasICT, bad: wrongType, badWant: wrongTypeWant},
		{feature: "v2Checkpoint", table: idTable(readerWriter7("v2Checkpoint"), map[string]string{"delta.checkpointPolicy": "v2"}, ""),
			good: ids(1), bad: wrongType, badWant: wrongTypeWant},
		{feature: "typeWidening", table: idTable(readerWriter7("typeWidening"), map[string]string{"delta.enableTypeWidening": "true"}, ""),
			good: ids(1), bad: wrongType, badWant: wrongTypeWant},
		{feature: "variantType", table: testTable{protocol: readerWriter7("variantType"),
			schema: structSchema(field("id", `"long"`, true, ""), field("v", `"variant"`, true, ""))},
			good: ids(1), bad: variantAsString, badWant: "column v has the wrong type"},
		{feature: "timestampNtz", table: testTable{protocol: readerWriter7("timestampNtz"), schema: structSchema(field("tn", `"timestamp_ntz"`, true, ""))},
			good: ntz(false), bad: ntz(true), badWant: "column tn has the wrong type"},
		{feature: "catalogManaged", table: idTable(`{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["catalogManaged"],`+
			`"writerFeatures":["catalogManaged","inCommitTimestamp"]}`, nil, ""), unwritable: "catalogManaged", unreadable: true},
		{feature: "delta.checkpoint.writeStatsAsJson=false, writeStatsAsStruct=true",
			table: idTable(legacy(2), map[string]string{"delta.checkpoint.writeStatsAsJson": "false",
				"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpointInterval": "1"}, ""),
			good: ids(1), check: checkStructStatsCheckpoint, bad: wrongType, badWant: wrongTypeWant},
	}
	for w := 2; w <= 6; w++ {
		rows = append(rows, conformanceRow{feature: "legacy writer version " + strconv.Itoa(w), table: idTable(legacy(w), nil, ""),
			good: ids(1), bad: wrongType, badWant: wrongTypeWant})
	}
	return rows
}

func TestWriteConformance(t *testing.T) {
	for _, row := range conformanceRows() {
		t.Run(row.feature, func(t *testing.T) {
			dir := row.table.create(t)
			before := listFiles(t, dir)
			c := newCommitter(t, dir)
			if row.unwritable != "" {
				werr := c.Writable(context.Background())
				_, err := c.Append(context.Background(), []File{{LocalPath: ids(1)(t), Name: "f.parquet"}})
				for _, e := range []error{werr, err} {
					var ufe *delta.UnsupportedFeatureError
					refused := errors.Is(e, ErrNotWritable) || row.unreadable && errors.As(e, &ufe) && ufe.Kind == "reader"
					if !refused || !strings.Contains(e.Error(), row.unwritable) {
						t.Errorf("error %v, want ErrNotWritable naming %q", e, row.unwritable)
					}
				}
				if !reflect.DeepEqual(before, listFiles(t, dir)) {
					t.Errorf("the unwritable table changed")
				}
				return
			}
			_, err := c.Append(context.Background(), []File{{LocalPath: row.bad(t), Name: "bad.parquet"}})
			if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), row.badWant) {
				t.Errorf("bad file: %v, want ErrInvalidFile containing %q", err, row.badWant)
			}
			if !reflect.DeepEqual(before, listFiles(t, dir)) {
				t.Errorf("a refused append changed the table")
			}
			res, err := c.Append(context.Background(), []File{{LocalPath: row.good(t), Name: "good.parquet"}})
			if err != nil {
				t.Fatalf("good file: %v", err)
			}
			c.WaitCheckpoints() // written after the commit, in the background
			if res.Version != 1 {
				t.Errorf("committed version %d, want 1", res.Version)
			}
			add := addFor(t, latest(t, dir), res.Added[0])
			if row.check != nil {
				row.check(t, dir, res.Version, add)
			}
		})
	}
}

func doubles(vals ...float64) func(t *testing.T) string {
	return func(t *testing.T) string {
		rows := make([]struct {
			C *float64 `parquet:"c,optional"`
		}, len(vals))
		for i := range vals {
			rows[i].C = ptr(vals[i])
		}
		return writeParquet(t, "c.parquet", rows)
	}
}

func ntz(utc bool) func(t *testing.T) string {
	return func(t *testing.T) string {
		if utc {
			return writeParquet(t, "tz.parquet", []struct {
				TN *int64 `parquet:"tn,optional,timestamp(microsecond:utc)"`
			}{{TN: ptr[int64](1)}})
		}
		return writeParquet(t, "ntz.parquet", []struct {
			TN *int64 `parquet:"tn,optional,timestamp(microsecond:local)"`
		}{{TN: ptr[int64](1)}})
	}
}

func variantAsString(t *testing.T) string {
	return writeParquet(t, "v.parquet", []struct {
		ID *int64  `parquet:"id,optional"`
		V  *string `parquet:"v,optional"`
	}{{ID: ptr[int64](1), V: ptr("{}")}})
}

// checkOnlyAdds: a blind append under change data feed writes no cdc files.
func checkOnlyAdds(t *testing.T, dir string, v int64, _ *delta.Add) {
	for _, line := range commitLines(t, dir, v) {
		if _, ok := line["cdc"]; ok {
			t.Errorf("commit %d has a cdc action", v)
		}
		if _, ok := line["remove"]; ok {
			t.Errorf("commit %d has a remove action", v)
		}
	}
}

func checkStatsKey(key string) func(t *testing.T, dir string, v int64, add *delta.Add) {
	return func(t *testing.T, _ string, _ int64, add *delta.Add) {
		var st struct {
			NullCount map[string]json.RawMessage `json:"nullCount"`
		}
		if err := json.Unmarshal([]byte(add.Stats), &st); err != nil || st.NullCount[key] == nil {
			t.Errorf("stats %s: no nullCount for %s (%v)", add.Stats, key, err)
		}
	}
}

// checkLogicalNames: the stats and the data file's footer use the logical
// name (no column mapping applied).
func checkLogicalNames(name string) func(t *testing.T, dir string, v int64, add *delta.Add) {
	return func(t *testing.T, dir string, v int64, add *delta.Add) {
		checkStatsKey(name)(t, dir, v, add)
		key, err := latest(t, dir).DataKey(add)
		if err != nil {
			t.Fatal(err)
		}
		_, names := readRows(t, filepath.Join(dir, filepath.FromSlash(key)))
		if len(names) != 1 || names[0] != name {
			t.Errorf("data file columns %v, want [%s]", names, name)
		}
	}
}

func checkNoDV(t *testing.T, _ string, _ int64, add *delta.Add) {
	if add.DeletionVector != nil {
		t.Errorf("a new file has a deletion vector")
	}
}

func checkRowIDs(t *testing.T, _ string, v int64, add *delta.Add) {
	if add.BaseRowID == nil || *add.BaseRowID != 0 || add.DefaultRowCommitVersion == nil || *add.DefaultRowCommitVersion != v {
		t.Errorf("baseRowId %v, defaultRowCommitVersion %v; want 0 and %d", add.BaseRowID, add.DefaultRowCommitVersion, v)
	}
}

func checkHasICT(t *testing.T, dir string, v int64, _ *delta.Add) {
	var ci struct {
		ICT *int64 `json:"inCommitTimestamp"`
	}
	if err := json.Unmarshal(commitLines(t, dir, v)[0]["commitInfo"], &ci); err != nil || ci.ICT == nil {
		t.Errorf("commit %d: no inCommitTimestamp in its first line (%v)", v, err)
	}
}

// checkStructStatsCheckpoint: the checkpoint the append wrote carries the
// stats as add.stats_parsed only.
func checkStructStatsCheckpoint(t *testing.T, dir string, v int64, _ *delta.Add) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(delta.CheckpointKey(v))))
	if err != nil {
		t.Fatalf("no checkpoint at version %d: %v", v, err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range pf.Schema().Columns() {
		if c[0] == "add" && len(c) > 1 {
			cols = append(cols, strings.Join(c[1:], "."))
		}
	}
	joined := "," + strings.Join(cols, ",") + ","
	if strings.Contains(joined, ",stats,") || !strings.Contains(joined, ",stats_parsed.numRecords,") ||
		!strings.Contains(joined, ",stats_parsed.minValues.id,") {
		t.Errorf("checkpoint add columns %v: want stats_parsed and no stats", cols)
	}
}
