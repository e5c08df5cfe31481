package delta

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Reader features this package implements (PROTOCOL.md "Table Features"). A reader
// presents the current schema: under typeWidening the data files of older
// versions keep their narrower physical types, so whoever serves Parquet
// files as-is serves those narrower types (readers of the files must widen).
var readerFeaturesSupported = map[string]bool{
	"columnMapping":            true,
	"deletionVectors":          true,
	"timestampNtz":             true,
	"v2Checkpoint":             true,
	"vacuumProtocolCheck":      true,
	"variantType":              true,
	"variantType-preview":      true,
	"variantShredding":         true,
	"variantShredding-preview": true,
	"typeWidening":             true,
	"typeWidening-preview":     true,
	// geospatial: geometry and geography columns are WKB in Parquet (a
	// BYTE_ARRAY with the GEOMETRY or GEOGRAPHY logical type); a reader
	// of the table's files needs nothing else, so their bytes are served
	// as stored. Writing is not supported (its statistics are bounding
	// boxes this package does not compute).
	"geospatial": true,
}

// catalogFeatures mark catalog-managed tables: their commits are ratified
// by a catalog, so the file system log alone may be stale or incomplete.
var catalogFeatures = map[string]bool{
	"catalogManaged":             true,
	"catalogOwned-preview":       true,
	"catalogOwned":               true,
	"coordinatedCommits-preview": true,
}

const catalogDetail = "catalog-managed tables are committed through their catalog; " +
	"the _delta_log alone may be incomplete, so they must be accessed through the catalog"

// maxReaderVersion and maxWriterVersion are the highest protocol versions
// defined by the spec.
const (
	maxReaderVersion = 3
	maxWriterVersion = 7
)

// CheckReadable returns nil when this package can read the table version
// with protocol p and metadata m. A missing protocol or metadata, or a
// reader version below 1, is an error wrapping ErrCorruptLog. Otherwise it
// returns an *UnsupportedFeatureError (Kind "reader") naming every reason
// at once: "readerVersion=N" for N > 3, each listed reader feature not
// implemented (catalog-managed ones with an explanation in Detail), and
// "columnMapping mode=X" for an unknown column mapping mode.
func CheckReadable(table string, version int64, p *Protocol, m *Metadata) error {
	if err := checkPresent(table, version, p, m); err != nil {
		return err
	}
	var bad []string
	if p.MinReaderVersion > maxReaderVersion {
		bad = append(bad, "readerVersion="+strconv.Itoa(p.MinReaderVersion))
	}
	for _, f := range p.ReaderFeatures {
		if !readerFeaturesSupported[f] && !slices.Contains(bad, f) {
			bad = append(bad, f)
		}
	}
	if mode := m.ColumnMapping(); !mode.Valid() {
		bad = append(bad, fmt.Sprintf("columnMapping mode=%s", mode))
	}
	return unsupported(table, version, "reader", bad)
}

func checkPresent(table string, version int64, p *Protocol, m *Metadata) error {
	switch {
	case p == nil:
		return &LogError{Table: table, Version: version, Err: corruptf("no protocol action")}
	case m == nil:
		return &LogError{Table: table, Version: version, Err: corruptf("no metaData action")}
	case p.MinReaderVersion < 1 || p.MinWriterVersion < 1:
		return &LogError{Table: table, Version: version, Err: corruptf(
			"invalid protocol versions reader=%d writer=%d", p.MinReaderVersion, p.MinWriterVersion)}
	}
	return nil
}

// unsupported builds the error for a non-empty list of reasons.
func unsupported(table string, version int64, kind string, bad []string) error {
	if len(bad) == 0 {
		return nil
	}
	e := &UnsupportedFeatureError{Table: table, Version: version, Kind: kind, Features: bad}
	for _, f := range bad {
		if catalogFeatures[f] {
			e.Detail = catalogDetail
		}
	}
	return e
}

// writerCheck decides one writer feature for a blind appender: "" when the
// appender can honour it given the metadata, else the reason it cannot.
type writerCheck func(m *Metadata, s *StructType) string

func writerOK(*Metadata, *StructType) string { return "" }

// writerFeaturesSupported lists the writer (and reader-writer) features a
// blind appender handles, some only while the feature is not in use.
// Anything else is refused (icebergCompat*, materializePartitionColumns,
// collations, catalog-managed, unknown names).
var writerFeaturesSupported = map[string]writerCheck{
	"appendOnly":               writerOK, // appends are allowed on append-only tables
	"invariants":               writerOK, // the appender evaluates them (see CheckWritable)
	"checkConstraints":         writerOK, // the appender evaluates them (see CheckWritable)
	"changeDataFeed":           writerOK, // pure inserts need no cdc files
	"generatedColumns":         noFieldMetadata("delta.generationExpression", "generated columns"),
	"identityColumns":          noFieldMetadata("delta.identity.", "identity columns"),
	"allowColumnDefaults":      noFieldMetadata("CURRENT_DEFAULT", "column defaults"),
	"columnMapping":            writerOK,
	"deletionVectors":          writerOK,
	"timestampNtz":             writerOK,
	"v2Checkpoint":             writerOK,
	"vacuumProtocolCheck":      writerOK,
	"domainMetadata":           writerOK,
	"rowTracking":              writerOK,
	"inCommitTimestamp":        writerOK,
	"typeWidening":             writerOK,
	"typeWidening-preview":     writerOK,
	"variantType":              writerOK,
	"variantType-preview":      writerOK,
	"variantShredding":         writerOK,
	"variantShredding-preview": writerOK,
	"clustering":               writerOK,
	"checkpointProtection":     writerOK,
}

// CheckWritable returns nil when a blind appender (adds only, partition
// columns not materialized) may commit to the table version with protocol
// p and metadata m. It requires everything CheckReadable does, writer
// version <= 7, and that every writer feature, listed (writer 7) or
// implied by a legacy writer version (2: appendOnly, invariants;
// 3: +checkConstraints; 4: +changeDataFeed, generatedColumns;
// 5: +columnMapping; 6: +identityColumns), is implemented and, for
// generated, identity and default columns, not in use. Column invariants
// and CHECK constraints do not make a table unwritable here: the appender
// must evaluate them on every row, and refuse what it cannot evaluate,
// wherever they are present (Spark enforces them even where the protocol
// version says they are inactive). The *UnsupportedFeatureError (Kind
// "writer") names every reason, e.g. "generatedColumns (generated columns
// in use: column c2)".
func CheckWritable(table string, version int64, p *Protocol, m *Metadata) error {
	if err := checkPresent(table, version, p, m); err != nil {
		return err
	}
	var bad []string
	if err := CheckReadable(table, version, p, m); err != nil {
		var ufe *UnsupportedFeatureError
		if !errors.As(err, &ufe) {
			return err
		}
		bad = append(bad, ufe.Features...)
	}
	if p.MinWriterVersion > maxWriterVersion {
		bad = append(bad, "writerVersion="+strconv.Itoa(p.MinWriterVersion))
	}
	schema, err := m.Schema()
	if err != nil {
		return &LogError{Table: table, Version: version, Err: err}
	}
	for _, f := range p.SupportedWriterFeatures() {
		check, ok := writerFeaturesSupported[f]
		switch {
		case !ok:
			if !slices.Contains(bad, f) {
				bad = append(bad, f)
			}
		case check(m, schema) != "":
			bad = append(bad, f+" ("+check(m, schema)+")")
		}
	}
	return unsupported(table, version, "writer", bad)
}

func noFieldMetadata(keyPrefix, what string) writerCheck {
	return func(_ *Metadata, s *StructType) string {
		if col := findFieldMetadata(s, nil, keyPrefix); col != "" {
			return what + " in use: column " + col
		}
		return ""
	}
}

// findFieldMetadata returns the dotted logical path of the first field
// (nested fields included) having a metadata key with the given prefix.
func findFieldMetadata(t DataType, path []string, keyPrefix string) string {
	switch t := t.(type) {
	case *StructType:
		for _, f := range t.Fields {
			fp := appendPath(path, f.Name)
			for k := range f.Metadata {
				if strings.HasPrefix(k, keyPrefix) {
					return strings.Join(fp, ".")
				}
			}
			if c := findFieldMetadata(f.Type, fp, keyPrefix); c != "" {
				return c
			}
		}
	case *ArrayType:
		return findFieldMetadata(t.ElementType, appendPath(path, "element"), keyPrefix)
	case *MapType:
		if c := findFieldMetadata(t.KeyType, appendPath(path, "key"), keyPrefix); c != "" {
			return c
		}
		return findFieldMetadata(t.ValueType, appendPath(path, "value"), keyPrefix)
	}
	return ""
}
