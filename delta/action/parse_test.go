package action

import (
	"errors"
	"strings"
	"testing"
)

// Parse takes NDJSON actions, skips blank lines and refuses, wrapping
// ErrCorruptLog and naming the line, what is not an action.
func TestParse(t *testing.T) {
	var got []*Action
	err := Parse([]byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}

{"add":{"path":"a.parquet","size":1,"modificationTime":0,"dataChange":true}}
{"unknownAction":{"x":1}}
`), func(a *Action) error { got = append(got, a); return nil })
	if err != nil || len(got) != 3 || got[0].Protocol == nil || got[1].Add == nil || got[1].Add.Path != "a.parquet" {
		t.Fatalf("Parse: %d actions, %v", len(got), err)
	}
	if u := got[2]; u.Add != nil || u.Remove != nil || u.Protocol != nil || u.MetaData != nil {
		t.Fatalf("an unknown action decoded as %+v, want no field set", u)
	}
	defer func(n int) { MaxLineBytes = n }(MaxLineBytes)
	MaxLineBytes = 1 << 10
	for _, tc := range []struct{ name, data, line string }{
		{"not an object", "{\"txn\":{\"appId\":\"a\",\"version\":1}}\n[1]\n", "line 2"},
		{"bad JSON", "{\"add\":", "line 1"},
		{"add without path", "{\"add\":{\"size\":1}}", "line 1"},
		{"protocol without versions", "{\"protocol\":{}}", "line 1"},
		{"line over the limit", "{\"commitInfo\":{\"x\":\"" + strings.Repeat("y", 1<<10) + "\"}}", "line 1"},
	} {
		err := Parse([]byte(tc.data), func(*Action) error { return nil })
		if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), tc.line) {
			t.Errorf("%s: %v, want ErrCorruptLog naming %s", tc.name, err, tc.line)
		}
	}
	stop := errors.New("stop")
	if err := Parse([]byte(`{"txn":{"appId":"a","version":1}}`), func(*Action) error { return stop }); err != stop {
		t.Errorf("the callback's error came back as %v", err)
	}
}

// A file's identity is its path and its deletion vector's unique id.
func TestFileKey(t *testing.T) {
	dv := &DeletionVector{StorageType: "u", PathOrInlineDV: "ab^-aqEH.-t@S}K{vb[*k^", SizeInBytes: 36, Cardinality: 2}
	a := &Add{Path: "p.parquet"}
	r := &Remove{Path: "p.parquet"}
	if a.Key() != r.Key() || a.Key() != "p.parquet" {
		t.Fatalf("keys %q %q, want the path", a.Key(), r.Key())
	}
	a.DeletionVector = dv
	if a.Key() == r.Key() || a.Key() != FileKey("p.parquet", dv) {
		t.Fatalf("with a DV the key %q should differ from %q", a.Key(), r.Key())
	}
}

// Legacy writer versions imply their features; writer 7 lists them.
func TestSupportedWriterFeatures(t *testing.T) {
	p := &Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
	for _, f := range []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"} {
		if !p.HasWriterFeature(f) {
			t.Errorf("writer 5 does not imply %s", f)
		}
	}
	if p.HasWriterFeature("identityColumns") || !p.HasReaderFeature("columnMapping") {
		t.Error("writer 5 implies identityColumns, or reader 2 not columnMapping")
	}
	p = &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"appendOnly"}}
	if !p.HasWriterFeature("deletionVectors") || !p.HasWriterFeature("appendOnly") || p.HasWriterFeature("invariants") {
		t.Errorf("writer 7 features %v", p.SupportedWriterFeatures())
	}
	if (*Protocol)(nil).HasWriterFeature("appendOnly") || (*Protocol)(nil).HasReaderFeature("columnMapping") {
		t.Error("a nil protocol has features")
	}
}
