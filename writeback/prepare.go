package writeback

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

// prepared is a file validated against one snapshot: everything its add
// action needs except where it was uploaded.
type prepared struct {
	file       File
	display    string
	renames    map[string]renameTo // nil when the table has no column mapping
	codec      string              // file name infix: "snappy", "zstd", ... or ""
	numRecords int64
	stats      string
	partValues map[string]*string // physical name -> canonical value
	dir        string             // partition directories ("a=1/b=x/"), "" when unpartitioned
	widened    string             // the re-encoded copy file points at, removed by cleanup; "" if none
}

// fingerprint identifies what an upload of p contains and where it goes:
// two preparations with equal fingerprints can share one uploaded file.
func (p *prepared) fingerprint() string {
	keys := make([]string, 0, len(p.renames))
	for k, r := range p.renames {
		keys = append(keys, k+"="+r.name+"#"+strconv.FormatInt(r.id, 10))
	}
	sort.Strings(keys)
	return p.dir + "\x01" + strings.Join(keys, "\x02") + "\x01" + p.stats
}

// prepare validates f against snap (partition values, Parquet footer,
// schema, nulls) and computes its statistics. It writes nothing.
func (c *Committer) prepare(ctx context.Context, snap *delta.Snapshot, f File) (*prepared, error) {
	display := f.Name
	if display == "" {
		display = f.LocalPath
	}
	m := snap.Metadata()
	schema, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	p := &prepared{file: f, display: display}
	partCols, err := p.setPartition(m, snap.ColumnMapping())
	if err != nil {
		return nil, err
	}
	pq, sc, pr, err := c.openChecked(ctx, p, schema, partCols, snap.ColumnMapping())
	if err != nil {
		return nil, fmt.Errorf("table %s version %d: %w", snap.Table(), snap.Version(), err)
	}
	defer pq.Close()
	if err := p.checkAndStat(snap, m, schema, partCols, pq, sc, pr); err != nil {
		p.cleanup()
		return nil, err
	}
	return p, nil
}

// openChecked opens p's file and matches its schema against the table's.
// A file whose columns only need lossless widenings is re-encoded first
// (widen.go) and p.file becomes the re-encoded copy, which must then
// match exactly: what is checked, measured and uploaded is that copy.
func (c *Committer) openChecked(ctx context.Context, p *prepared, schema *delta.StructType, partCols map[string]bool, mode delta.ColumnMappingMode) (*pqFile, *schemaCheck, *proof, error) {
	pq, err := openParquet(p.file.LocalPath, p.display)
	if err != nil {
		return nil, nil, nil, err
	}
	var widen []widening
	sc := &schemaCheck{file: p.display, mode: mode, renames: map[string]renameTo{}, widen: &widen}
	if err := sc.checkTopLevel(schema, partCols, pq.root); err != nil {
		pq.Close()
		return nil, nil, nil, err
	}
	// Every page is decoded before anything else reads the file's values
	// (the NOT NULL check, the constraints, the re-encoding of widened
	// columns): what they read has then been proven to decode within the
	// budget.
	pr, err := c.proveFile(ctx, pq, sc, p.display)
	if err != nil {
		pq.Close()
		return nil, nil, nil, err
	}
	if len(widen) == 0 {
		return pq, sc, pr, nil
	}
	pq.Close()
	path, err := widenFile(p.file.LocalPath, c.opts.TempDir, widen, p.display)
	if err != nil {
		return nil, nil, nil, err
	}
	p.widened = path
	p.file.LocalPath, p.file.Owned = path, true
	if pq, err = openParquet(path, p.display); err == nil {
		sc = &schemaCheck{file: p.display, mode: mode, renames: map[string]renameTo{}}
		if err = sc.checkTopLevel(schema, partCols, pq.root); err != nil {
			pq.Close()
			err = fmt.Errorf("re-encoded copy of %s still does not match the table: %w", p.display, err)
		} else if pr, err = c.proveFile(ctx, pq, sc, p.display); err != nil {
			pq.Close()
		}
	}
	if err != nil {
		p.cleanup()
		return nil, nil, nil, err
	}
	return pq, sc, pr, nil
}

// cleanup removes the re-encoded copy of the file, if one was made.
func (p *prepared) cleanup() {
	if p.widened != "" {
		os.Remove(p.widened)
	}
}

// checkAndStat runs the content checks (nulls, constraints) on the
// opened file and computes the add action's statistics.
func (p *prepared) checkAndStat(snap *delta.Snapshot, m *delta.Metadata, schema *delta.StructType, partCols map[string]bool, pq *pqFile, sc *schemaCheck, pr *proof) error {
	display := p.display
	cs, err := tableConstraints(m, schema)
	if err != nil {
		return fmt.Errorf("%w: table %s version %d: %w", ErrNotWritable, snap.Table(), snap.Version(), err)
	}
	if err := p.checkConstraints(cs, schema, pq, sc.leaves, partCols, snap.ColumnMapping()); err != nil {
		return err
	}
	if sc.mode != delta.ColumnMappingNone {
		p.renames = sc.renames
	}
	p.codec = codecName(pq.meta)
	p.numRecords = pr.rows
	sel, err := statsSelector(snap, schema, partCols)
	if err != nil {
		return fmt.Errorf("%w: table %s version %d: %w", ErrNotWritable, snap.Table(), snap.Version(), err)
	}
	p.stats, err = buildStats(pr, sc.leaves, sel, stringPrefix(m), display)
	return err
}

// setPartition checks the partition values given for the file: one per
// partition column (names matched case-insensitively), each parsing as the
// column's type. It stores them canonically, keyed by physical name, and
// returns the lower-cased partition column names.
func (p *prepared) setPartition(m *delta.Metadata, mode delta.ColumnMappingMode) (map[string]bool, error) {
	fields, err := m.PartitionSchema()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotWritable, err)
	}
	given := map[string]*string{}
	for k, v := range p.file.PartitionValues {
		given[strings.ToLower(k)] = v
	}
	cols := map[string]bool{}
	p.partValues = map[string]*string{}
	for _, f := range fields {
		key := strings.ToLower(f.Name)
		cols[key] = true
		v, ok := given[key]
		if !ok {
			return nil, invalidf("%s: no value for partition column %s: put the file in inbox/%s/",
				p.display, f.Name, partitionHint(fields))
		}
		canon, err := delta.CanonicalPartitionValue(f.Type, v)
		if err != nil {
			return nil, invalidf("%s: partition column %s: %v", p.display, f.Name, err)
		}
		phys := f.PhysicalName(mode)
		p.partValues[phys] = canon
		p.dir += delta.HivePathSegment(phys, canon) + "/"
	}
	for k := range given {
		if !cols[k] {
			return nil, invalidf("%s: %q is not a partition column of the table (partition columns: %s)",
				p.display, k, partitionHint(fields))
		}
	}
	return cols, nil
}

func partitionHint(fields []*delta.StructField) string {
	if len(fields) == 0 {
		return "(none: the table is not partitioned)"
	}
	segs := make([]string, len(fields))
	for i, f := range fields {
		segs[i] = f.Name + "=<" + f.Type.String() + ">"
	}
	return strings.Join(segs, "/")
}

// codecName returns Spark's file name infix for the file's codec: that of
// its first column chunk ("" for uncompressed or an empty file).
func codecName(meta *format.FileMetaData) string {
	if len(meta.RowGroups) == 0 || len(meta.RowGroups[0].Columns) == 0 {
		return ""
	}
	switch meta.RowGroups[0].Columns[0].MetaData.Codec {
	case format.Snappy:
		return "snappy"
	case format.Gzip:
		return "gz"
	case format.Zstd:
		return "zstd"
	case format.Lz4, format.Lz4Raw:
		return "lz4"
	case format.Brotli:
		return "br"
	case format.LZO:
		return "lzo"
	}
	return ""
}

// statsSelector decides which leaves get min/max/nullCount:
// delta.dataSkippingStatsColumns when set, else the first
// delta.dataSkippingNumIndexedCols (default 32, -1 = all) leaves of the
// data schema; clustering columns always.
func statsSelector(snap *delta.Snapshot, schema *delta.StructType, partCols map[string]bool) (statSelection, error) {
	m := snap.Metadata()
	clustering, err := clusteringColumns(snap, schema)
	if err != nil {
		return statSelection{}, err
	}
	sel := statSelection{clustering: clustering}
	if list := strings.TrimSpace(m.Configuration[configStatsColumns]); list != "" {
		var prefixes [][]string
		for _, col := range strings.Split(list, ",") {
			prefixes = append(prefixes, splitColumnPath(strings.TrimSpace(col)))
		}
		sel.selected = func(p []string) bool { return hasPrefix(p, prefixes) }
		return sel, nil
	}
	n := defaultNumIndexed
	if v, err := strconv.Atoi(strings.TrimSpace(m.Configuration[configNumIndexed])); err == nil {
		n = v
	}
	first := map[string]bool{}
	count := 0
	var walk func(st *delta.StructType, path []string)
	walk = func(st *delta.StructType, path []string) {
		for _, f := range st.Fields {
			fp := appendPath(path, f.Name)
			if len(path) == 0 && partCols[strings.ToLower(f.Name)] {
				continue
			}
			if inner, ok := f.Type.(*delta.StructType); ok {
				walk(inner, fp)
				continue
			}
			if n < 0 || count < n {
				first[strings.ToLower(dotted(fp))] = true
			}
			count++
		}
	}
	walk(schema, nil)
	sel.selected = func(p []string) bool { return first[strings.ToLower(dotted(p))] }
	return sel, nil
}

// splitColumnPath splits "a.b" or "`a.b`.c" into its parts, lower-cased.
func splitColumnPath(s string) []string {
	var parts []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '`':
			quoted = !quoted
		case r == '.' && !quoted:
			parts = append(parts, strings.ToLower(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(parts, strings.ToLower(cur.String()))
}

func hasPrefix(p []string, prefixes [][]string) bool {
	for _, pre := range prefixes {
		if len(pre) <= len(p) {
			ok := true
			for i := range pre {
				ok = ok && strings.EqualFold(pre[i], p[i])
			}
			if ok {
				return true
			}
		}
	}
	return false
}

func stringPrefix(m *delta.Metadata) int {
	if v, err := strconv.Atoi(strings.TrimSpace(m.Configuration[configStringPrefix])); err == nil && v > 0 {
		return v
	}
	return defaultStringPrefix
}

// rename returns the footer rewrite for column mapping, nil without it.
func (p *prepared) rename() *pqfile.Rename {
	if p.renames == nil {
		return nil
	}
	return &pqfile.Rename{
		Name: func(path []string) (string, bool) {
			r, ok := p.renames[pathKey(path)]
			return r.name, ok
		},
		FieldID: func(path []string) (int32, bool) {
			r, ok := p.renames[pathKey(path)]
			return int32(r.id), ok && r.hasID
		},
	}
}
