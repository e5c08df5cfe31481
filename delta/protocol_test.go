package delta

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func proto(r, w int, rf, wf []string) *Protocol {
	return &Protocol{MinReaderVersion: r, MinWriterVersion: w, ReaderFeatures: rf, WriterFeatures: wf}
}

const plainSchema = `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}`

func metaWith(schema string, conf map[string]string) *Metadata {
	return &Metadata{SchemaString: schema, Configuration: conf}
}

// fieldMetaSchema has one nested field carrying the given metadata key.
func fieldMetaSchema(key string) string {
	return `{"type":"struct","fields":[{"name":"s","type":{"type":"array","elementType":{"type":"struct","fields":[
		{"name":"x","type":"long","nullable":true,"metadata":{"` + key + `":"v"}}]}},"nullable":true,"metadata":{}}]}`
}

// checkFeatureErr asserts err is nil (want == nil) or an
// *UnsupportedFeatureError of kind whose Features equal want.
func checkFeatureErr(t *testing.T, what string, err error, kind string, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("%s: unexpected error %v", what, err)
		}
		return
	}
	var ufe *UnsupportedFeatureError
	if !errors.As(err, &ufe) || !errors.Is(err, ErrUnsupportedFeature) {
		t.Errorf("%s: err = %v, want UnsupportedFeatureError %v", what, err, want)
		return
	}
	if ufe.Kind != kind || !reflect.DeepEqual(ufe.Features, want) {
		t.Errorf("%s: got %s %q, want %s %q", what, ufe.Kind, ufe.Features, kind, want)
	}
	for _, f := range want {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%s: message %q does not name %q", what, err, f)
		}
	}
}

func TestCheckReadable(t *testing.T) {
	plain := metaWith(plainSchema, nil)
	tests := []struct {
		name string
		p    *Protocol
		m    *Metadata
		want []string
	}{
		{"legacy 1", proto(1, 2, nil, nil), plain, nil},
		{"legacy 2 column mapping", proto(2, 5, nil, nil), metaWith(plainSchema, map[string]string{"delta.columnMapping.mode": "name"}), nil},
		{"features all known", proto(3, 7, []string{"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint",
			"vacuumProtocolCheck", "variantType", "variantType-preview", "variantShredding", "variantShredding-preview",
			"typeWidening", "typeWidening-preview", "geospatial"}, nil), plain, nil},
		{"empty features", proto(3, 7, []string{}, []string{}), plain, nil},
		{"writer features do not matter", proto(1, 7, nil, []string{"collations", "whatever"}), plain, nil},
		{"reader 4", proto(4, 7, nil, nil), plain, []string{"readerVersion=4"}},
		{"unknown features", proto(3, 7, []string{"blahblah", "deletionVectors", "blahabl", "blahblah"}, nil), plain,
			[]string{"blahblah", "blahabl"}},
		{"writer-only name as reader feature", proto(3, 7, []string{"domainMetadata"}, nil), plain, []string{"domainMetadata"}},
		{"version and features", proto(5, 7, []string{"columnMapping", "blahabl"}, nil), plain, []string{"readerVersion=5", "blahabl"}},
		{"bad mapping mode", proto(2, 5, nil, nil), metaWith(plainSchema, map[string]string{"delta.columnMapping.mode": "names"}),
			[]string{"columnMapping mode=names"}},
	}
	for _, tt := range tests {
		checkFeatureErr(t, tt.name, CheckReadable("tbl", 3, tt.p, tt.m), "reader", tt.want)
	}
}

func TestCheckReadableCatalogManaged(t *testing.T) {
	for _, f := range []string{"catalogManaged", "catalogOwned-preview"} {
		err := CheckReadable("tbl", 7, proto(3, 7, []string{f}, []string{f}), metaWith(plainSchema, nil))
		checkFeatureErr(t, f, err, "reader", []string{f})
		if err == nil || !strings.Contains(err.Error(), "through the catalog") || !strings.Contains(err.Error(), "version 7") {
			t.Errorf("%s: message %q should explain the catalog and name the version", f, err)
		}
	}
}

func TestCheckCorrupt(t *testing.T) {
	plain := metaWith(plainSchema, nil)
	for name, c := range map[string]struct {
		p *Protocol
		m *Metadata
	}{
		"no protocol": {nil, plain}, "no metadata": {proto(1, 2, nil, nil), nil},
		"reader 0": {proto(0, 2, nil, nil), plain}, "writer 0": {proto(1, 0, nil, nil), plain},
	} {
		for _, check := range []func(string, int64, *Protocol, *Metadata) error{CheckReadable, CheckWritable} {
			err := check("tbl", 1, c.p, c.m)
			var le *LogError
			if !errors.Is(err, ErrCorruptLog) || !errors.As(err, &le) || le.Table != "tbl" {
				t.Errorf("%s: err = %v, want a LogError wrapping ErrCorruptLog", name, err)
			}
		}
	}
	if err := CheckWritable("tbl", 1, proto(1, 2, nil, nil), &Metadata{}); !errors.Is(err, ErrCorruptLog) {
		t.Errorf("writable without schema: %v", err)
	}
}

func TestCheckWritable(t *testing.T) {
	plain := metaWith(plainSchema, nil)
	ok := []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "identityColumns",
		"allowColumnDefaults", "columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
		"domainMetadata", "rowTracking", "inCommitTimestamp", "typeWidening", "typeWidening-preview", "variantType",
		"variantType-preview", "variantShredding", "variantShredding-preview", "clustering", "checkpointProtection"}
	tests := []struct {
		name string
		p    *Protocol
		m    *Metadata
		want []string
	}{
		{"legacy 2 unused", proto(1, 2, nil, nil), plain, nil},
		{"all implemented, none in use", proto(3, 7, []string{"deletionVectors"}, ok), plain, nil},
		// Invariants and CHECK constraints are the appender's to evaluate.
		{"invariants in use", proto(1, 2, nil, nil), metaWith(fieldMetaSchema("delta.invariants"), nil), nil},
		{"constraints in use", proto(1, 3, nil, nil), metaWith(plainSchema, map[string]string{"delta.constraints.pos": "a > 0"}), nil},
		{"generated in use", proto(1, 4, nil, nil), metaWith(fieldMetaSchema("delta.generationExpression"), nil),
			[]string{"generatedColumns (generated columns in use: column s.element.x)"}},
		{"generated below writer 4", proto(1, 3, nil, nil), metaWith(fieldMetaSchema("delta.generationExpression"), nil), nil},
		{"identity in use", proto(1, 6, nil, nil), metaWith(fieldMetaSchema("delta.identity.start"), nil),
			[]string{"identityColumns (identity columns in use: column s.element.x)"}},
		{"defaults in use", proto(1, 7, nil, []string{"allowColumnDefaults"}), metaWith(fieldMetaSchema("CURRENT_DEFAULT"), nil),
			[]string{"allowColumnDefaults (column defaults in use: column s.element.x)"}},
		{"writer 8", proto(1, 8, nil, nil), plain, []string{"writerVersion=8"}},
		{"refused writer features", proto(2, 7, nil, []string{"columnMapping", "icebergCompatV2", "materializePartitionColumns",
			"collations", "liquid"}), plain, []string{"icebergCompatV2", "materializePartitionColumns", "collations", "liquid"}},
		{"reader refusals carry over once", proto(3, 7, []string{"blahabl"}, []string{"blahabl", "appendOnly"}), plain,
			[]string{"blahabl"}},
		{"catalog managed", proto(3, 7, []string{"catalogManaged"}, []string{"catalogManaged", "inCommitTimestamp"}), plain,
			[]string{"catalogManaged"}},
	}
	for _, tt := range tests {
		checkFeatureErr(t, tt.name, CheckWritable("tbl", 3, tt.p, tt.m), "writer", tt.want)
	}
}

func TestHasFeature(t *testing.T) {
	tests := []struct {
		p              *Protocol
		name           string
		reader, writer bool
	}{
		{nil, "appendOnly", false, false},
		{proto(1, 2, nil, nil), "appendOnly", false, true},
		{proto(1, 2, nil, nil), "checkConstraints", false, false},
		{proto(1, 6, nil, nil), "identityColumns", false, true},
		{proto(1, 6, nil, nil), "generatedColumns", false, true},
		{proto(2, 5, nil, nil), "columnMapping", true, true},
		{proto(2, 2, nil, nil), "columnMapping", true, true},
		{proto(1, 7, nil, []string{"rowTracking"}), "rowTracking", false, true},
		{proto(1, 7, nil, []string{"rowTracking"}), "appendOnly", false, false},
		{proto(3, 7, []string{"deletionVectors"}, nil), "deletionVectors", true, true},
		{proto(3, 7, []string{"deletionVectors"}, nil), "columnMapping", false, false},
	}
	for _, tt := range tests {
		if got := tt.p.HasReaderFeature(tt.name); got != tt.reader {
			t.Errorf("%+v.HasReaderFeature(%s) = %v", tt.p, tt.name, got)
		}
		if got := tt.p.HasWriterFeature(tt.name); got != tt.writer {
			t.Errorf("%+v.HasWriterFeature(%s) = %v", tt.p, tt.name, got)
		}
	}
}

func TestMetadataProperties(t *testing.T) {
	tests := []struct {
		conf     map[string]string
		ict      bool
		ev, ets  int64
		eok      bool
		interval int
	}{
		{nil, false, 0, 0, false, 10},
		{map[string]string{"delta.enableInCommitTimestamps": "TRUE", "delta.checkpointInterval": "100"}, true, 0, 0, false, 100},
		{map[string]string{"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "5",
			"delta.inCommitTimestampEnablementTimestamp": "1700000000000"}, true, 5, 1700000000000, true, 10},
		{map[string]string{"delta.inCommitTimestampEnablementVersion": "5"}, false, 0, 0, false, 10},
		{map[string]string{"delta.inCommitTimestampEnablementVersion": "x", "delta.inCommitTimestampEnablementTimestamp": "1",
			"delta.checkpointInterval": "0"}, false, 0, 0, false, 10},
		{map[string]string{"delta.enableInCommitTimestamps": "false", "delta.checkpointInterval": "abc"}, false, 0, 0, false, 10},
	}
	for _, tt := range tests {
		m := &Metadata{Configuration: tt.conf}
		if got := m.InCommitTimestampsEnabled(); got != tt.ict {
			t.Errorf("%v: InCommitTimestampsEnabled = %v", tt.conf, got)
		}
		if v, ts, ok := m.ICTEnablement(); v != tt.ev || ts != tt.ets || ok != tt.eok {
			t.Errorf("%v: ICTEnablement = %d, %d, %v", tt.conf, v, ts, ok)
		}
		if got := m.CheckpointInterval(); got != tt.interval {
			t.Errorf("%v: CheckpointInterval = %d", tt.conf, got)
		}
	}
}

// fixtureRefusals is what CheckReadable must say about each fixture that
// is not readable, per shared/fixtures/README.md and FIXTURE.json: the
// refused feature names, or "corrupt" for a missing protocol/metadata.
var fixtureRefusals = map[string][]string{
	"delta-rs/simple_table_features":                                        {"readerVersion=5", "blahabl"},
	"delta-rs/data_err_logs_table_d":                                        {"catalogOwned"},
	"delta-rs/data_err_logs_table_e":                                        {"catalogOwned"},
	"delta-rs/data_err_logs_table_f":                                        {"catalogOwned"},
	"delta-rs/data_err_logs_table_h":                                        {"catalogOwned"},
	"delta-rs/data_err_logs_table_i":                                        {"catalogOwned"},
	"delta/bench-basic_catalog_managed":                                     {"catalogManaged"},
	"delta/kernel-catalog-owned-preview":                                    {"catalogManaged"},
	"delta-kernel-rs/uc-catalog_managed_0":                                  {"catalogManaged"},
	"delta-kernel-rs/golden-deltalog-invalid-protocol-version":              {"readerVersion=99"},
	"delta-kernel-rs/crc-malformed":                                         {"corrupt"},
	"delta-kernel-rs/golden-no-delta-log-folder":                            {"corrupt"},
	"delta-kernel-rs/golden-deltalog-state-reconstruction-without-metadata": {"corrupt"},
	"delta-kernel-rs/golden-deltalog-state-reconstruction-without-protocol": {"corrupt"},
	"delta-kernel-rs/golden-data-reader-absolute-paths-escaped-chars":       {"corrupt"},
}

// TestCheckReadableFixtures runs CheckReadable on every fixture's latest
// protocol and metadata (replayed from the JSON commits; for the few tables
// whose protocol/metadata live only in a checkpoint, taken from
// FIXTURE.json) and compares with fixtureRefusals. It logs CheckWritable's
// verdict for every readable fixture.
func TestCheckReadableFixtures(t *testing.T) {
	commits := fixtureCommits(t)
	index := testenv.Index(t)
	if len(index) < 200 {
		t.Fatalf("INDEX.tsv lists %d fixtures", len(index))
	}
	refused := 0
	for _, fx := range index {
		p, m := latestProtocolMetadata(t, fx.Name, commits[fx.Name])
		err := CheckReadable(fx.Name, int64(fx.LatestVersion), p, m)
		want, mustRefuse := fixtureRefusals[fx.Name]
		switch {
		case !mustRefuse:
			checkFeatureErr(t, fx.Name, err, "reader", nil)
		case want[0] == "corrupt":
			if !errors.Is(err, ErrCorruptLog) {
				t.Errorf("%s: err = %v, want ErrCorruptLog", fx.Name, err)
			}
		default:
			checkFeatureErr(t, fx.Name, err, "reader", want)
		}
		if err != nil {
			refused++
			t.Logf("refused %s: %v", fx.Name, err)
			continue
		}
		if werr := CheckWritable(fx.Name, int64(fx.LatestVersion), p, m); werr != nil {
			t.Logf("not writable %s: %v", fx.Name, werr)
		}
	}
	if refused != len(fixtureRefusals) {
		t.Errorf("refused %d fixtures, want %d", refused, len(fixtureRefusals))
	}
}

// latestProtocolMetadata replays protocol and metaData from the JSON
// commits; when the log has a checkpoint and the commits lack them it takes
// FIXTURE.json's protocol and configuration instead.
func latestProtocolMetadata(t *testing.T, name string, commits []fixtureCommit) (*Protocol, *Metadata) {
	t.Helper()
	var p *Protocol
	var m *Metadata
	for _, c := range commits {
		for _, a := range c.actions {
			if a.Protocol != nil {
				p = a.Protocol
			}
			if a.MetaData != nil {
				m = a.MetaData
			}
		}
	}
	if p != nil && m != nil {
		return p, m
	}
	if _, err := os.Stat(filepath.Join(testenv.FixtureRoot(t, name), "FIXTURE.json")); err != nil {
		return p, m
	}
	fj := testenv.LoadFixtureJSON(t, name)
	if cps, _ := fj["checkpoints"].([]any); len(cps) == 0 {
		return p, m // no checkpoint to hold them: the log really lacks them
	}
	if fp, ok := fj["protocol"].(map[string]any); ok && p == nil {
		p = &Protocol{MinReaderVersion: jsonInt(fp["minReader"]), MinWriterVersion: jsonInt(fp["minWriter"]),
			ReaderFeatures: jsonStrings(fp["readerFeatures"]), WriterFeatures: jsonStrings(fp["writerFeatures"])}
	}
	if m == nil {
		conf := map[string]string{}
		cm, _ := fj["config"].(map[string]any)
		for k, v := range cm {
			conf[k], _ = v.(string)
		}
		m = &Metadata{SchemaString: plainSchema, Configuration: conf}
	}
	return p, m
}

func jsonInt(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func jsonStrings(v any) []string {
	l, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
