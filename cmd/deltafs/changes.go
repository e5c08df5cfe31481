package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
	"github.com/deltafs/deltafs/serve"
)

const changesHelp = `Print the change data feed of a table between two versions: the rows each
version inserted, deleted or updated, with the table's columns and
_change_type (insert, delete, update_preimage, update_postimage),
_commit_version and _commit_timestamp, as Spark's table_changes gives them.
A version's changes are its CDC files' rows where it wrote them, else the
rows of the files it added and removed (deletion vectors applied).

FROM and TO are versions (3 or v3) or times (2026-05-01, 2026-05-01T14:30:00Z):
a time FROM is the first version committed at or after it, a time TO the last
one at or before it, as Spark's table_changes takes them; TO defaults to the
latest version. A range
where the feed was not enabled throughout (delta.enableChangeDataFeed), whose
schema changed, or whose commits left the log is refused with the reason.

--json prints one JSON object per row; --out DIR writes one Parquet file per
change file (vVERSION-N-NAME.parquet) for any Parquet reader. Rewritten files
are built in a temporary cache unless --cache-dir is given.

Examples:
  deltafs changes ./orders 10 --json | jq -c 'select(._change_type == "insert")'
  deltafs changes ./orders 10 20 --out /tmp/orders-changes
  duckdb -c "select * from '/tmp/orders-changes/*.parquet'"
`

func runChanges(ctx context.Context, args []string) error {
	fs := newFlags("changes", "URL FROM [TO]", changesHelp)
	asJSON := fs.Bool("json", false, "print one JSON object per changed row")
	out := fs.String("out", "", "write the change files as Parquet into this directory (created)")
	cacheDir := fs.String("cache-dir", "", "disk cache for rewritten files (default: a temporary directory, removed)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos) > 3 {
		return usageError(fs, "want a table URL, FROM and optionally TO, got %d arguments", len(pos))
	}
	if *asJSON == (*out != "") {
		return usageError(fs, "want one of --json and --out")
	}
	t, closeFn, err := openTable(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeFn()
	from, to, err := changeRange(ctx, t, pos[1:])
	if err != nil {
		return err
	}
	c, err := newChangeCache(*cacheDir)
	if err != nil {
		return err
	}
	defer c.close()
	srv := serve.NewTable(t.Name(), t.Storage(), c.cache, serve.Options{})
	defer srv.Close()
	end, err := t.Snapshot(ctx, to)
	if err != nil {
		return err
	}
	var sink changeSink = &jsonSink{w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		sink = &dirSink{dir: *out}
	}
	err = t.Changes(ctx, from, to, func(cf delta.ChangeFile) error {
		keep, drop, err := t.Rows(ctx, cf)
		if err != nil {
			return err
		}
		content, err := srv.OpenChange(ctx, end, cf, keep, drop)
		if err != nil {
			return err
		}
		defer content.Close()
		return sink.file(cf, io.NewSectionReader(serve.ReaderAt(ctx, content), 0, content.Size()))
	})
	if ferr := sink.close(); err == nil {
		err = ferr
	}
	return err
}

// changeRange resolves FROM and TO (default: the latest version). A time
// FROM is the first version committed at or after it, a time TO the last
// one at or before it, as Spark's table_changes takes them.
func changeRange(ctx context.Context, t *delta.Table, args []string) (from, to int64, err error) {
	if from, err = versionArg(ctx, t, args[0], true); err != nil {
		return 0, 0, err
	}
	if len(args) == 2 {
		to, err = versionArg(ctx, t, args[1], false)
		return from, to, err
	}
	latest, err := t.Latest(ctx)
	if err != nil {
		return 0, 0, err
	}
	return from, latest.Version(), nil
}

// versionArg is a version (3, v3) or a time: the first version at or
// after it for a start, the version as of it for an end.
func versionArg(ctx context.Context, t *delta.Table, s string, start bool) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	spec, err := delta.ParseSpec(s)
	if err != nil {
		return 0, err
	}
	if spec.IsTime && start {
		return t.VersionAtOrAfter(ctx, spec.Time)
	}
	if spec.IsTime {
		return t.VersionAt(ctx, spec.Time)
	}
	if spec.Latest {
		latest, err := t.Latest(ctx)
		if err != nil {
			return 0, err
		}
		return latest.Version(), nil
	}
	return spec.Version, nil
}

// changeCache is the disk cache the rewritten change files go through.
type changeCache struct {
	cache *blobcache.Cache
	tmp   string // removed at close; "" for --cache-dir
}

func newChangeCache(dir string) (*changeCache, error) {
	c := &changeCache{}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "deltafs-changes-")
		if err != nil {
			return nil, err
		}
		c.tmp, dir = tmp, tmp
	}
	cache, err := blobcache.New(blobcache.Options{DiskDir: dir})
	if err != nil {
		c.close()
		return nil, err
	}
	c.cache = cache
	return c, nil
}

func (c *changeCache) close() {
	if c.cache != nil {
		c.cache.Close()
	}
	if c.tmp != "" {
		os.RemoveAll(c.tmp)
	}
}

// changeSink takes the change files of a range, in order.
type changeSink interface {
	file(cf delta.ChangeFile, r *io.SectionReader) error
	close() error
}

// dirSink writes each change file into a directory.
type dirSink struct {
	dir string
	n   int
}

func (d *dirSink) file(cf delta.ChangeFile, r *io.SectionReader) error {
	name := serve.ChangeFileName(d.n, cf)
	d.n++
	f, err := os.Create(filepath.Join(d.dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (d *dirSink) close() error { return nil }

// jsonSink prints each row of each change file as a JSON object.
type jsonSink struct{ w *bufio.Writer }

func (j *jsonSink) file(cf delta.ChangeFile, r *io.SectionReader) error {
	f, err := pqfile.OpenFile(r, r.Size())
	if err != nil {
		return fmt.Errorf("change file %s of version %d: %w", cf.Key, cf.Version, err)
	}
	rd := parquet.NewReader(f)
	defer rd.Close()
	enc := json.NewEncoder(j.w)
	enc.SetEscapeHTML(false)
	schema := f.Schema()
	rows := make([]parquet.Row, 64)
	for {
		n, err := rd.ReadRows(rows)
		for _, row := range rows[:n] {
			m := map[string]any{}
			if err := schema.Reconstruct(&m, row); err != nil {
				return fmt.Errorf("change file %s of version %d: %w", cf.Key, cf.Version, err)
			}
			if err := enc.Encode(jsonRow(schema, row, m)); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("change file %s of version %d: %w", cf.Key, cf.Version, err)
		}
	}
}

func (j *jsonSink) close() error { return j.w.Flush() }

// jsonRow gives the top-level leaf values of a row that JSON would show
// by their encoding as a reader writes them: dates and timestamps as
// text, decimals exactly (from the stored unscaled value: parquet-go's
// reconstruction gives an INT32 decimal as a float32), INT96 timestamps
// as text. raw is the row, m its reconstruction.
func jsonRow(s *parquet.Schema, raw parquet.Row, m map[string]any) map[string]any {
	col := 0
	for _, f := range s.Fields() {
		if !f.Leaf() {
			col += countLeaves(f)
			continue
		}
		if v, ok := m[f.Name()]; ok && v != nil {
			if x, ok := rawLeaf(f.Type(), raw, col); ok {
				v = x
			}
			m[f.Name()] = jsonValue(f.Type(), v)
		}
		col++
	}
	return m
}

// countLeaves is the number of leaf columns under n.
func countLeaves(n parquet.Node) int {
	if n.Leaf() {
		return 1
	}
	k := 0
	for _, f := range n.Fields() {
		k += countLeaves(f)
	}
	return k
}

// rawLeaf returns the stored value of leaf column col of a decimal or
// INT96 field, which jsonValue converts exactly.
func rawLeaf(t parquet.Type, row parquet.Row, col int) (any, bool) {
	_, isDecimal := logicalOf(t).(*format.DecimalType)
	if !isDecimal && t.Kind() != parquet.Int96 {
		return nil, false
	}
	for _, v := range row {
		if v.Column() != col || v.IsNull() {
			continue
		}
		switch v.Kind() {
		case parquet.Int32:
			return v.Int32(), true
		case parquet.Int64:
			return v.Int64(), true
		case parquet.Int96:
			return v.Int96(), true
		case parquet.ByteArray, parquet.FixedLenByteArray:
			return v.ByteArray(), true
		}
	}
	return nil, false
}

// logicalOf is t's logical type annotation, or nil.
func logicalOf(t parquet.Type) any {
	if l := t.LogicalType(); l != nil {
		return l.Value
	}
	return nil
}

// jsonValue is one leaf value as jsonRow gives it.
func jsonValue(t parquet.Type, v any) any {
	if i96, ok := v.(deprecated.Int96); ok { // Spark's legacy timestamps: nanoseconds of a Julian day
		nanos := int64(i96[1])<<32 | int64(i96[0])
		days := int64(i96[2]) - 2440588 // the Julian day of 1970-01-01
		return time.Unix(days*86400, nanos).UTC().Format(time.RFC3339Nano)
	}
	switch lt := logicalOf(t).(type) {
	case *format.DateType:
		if d, ok := v.(int32); ok {
			return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
		}
	case *format.TimestampType:
		if n, ok := v.(int64); ok {
			return timestampText(n, lt)
		}
	case *format.DecimalType:
		if d, ok := decimalText(v, int(lt.Scale)); ok {
			return json.Number(d)
		}
	}
	return v
}

// decimalText is an unscaled decimal (INT32, INT64 or big-endian two's
// complement bytes) with scale digits after the point.
func decimalText(v any, scale int) (string, bool) {
	var n big.Int
	switch x := v.(type) {
	case int32:
		n.SetInt64(int64(x))
	case int64:
		n.SetInt64(x)
	case []byte:
		n.SetBytes(x)
		if len(x) > 0 && x[0]&0x80 != 0 { // negative: subtract 2^(8*len)
			n.Sub(&n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(x))))
		}
	default:
		return "", false
	}
	return new(big.Rat).SetFrac(&n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale), true
}

// timestampText is a Parquet timestamp of ts's unit as RFC 3339 text: in
// UTC, or without a zone for one not adjusted to UTC (timestamp_ntz).
func timestampText(n int64, ts *format.TimestampType) string {
	var t time.Time
	switch ts.Unit.Value.(type) {
	case *format.MilliSeconds:
		t = time.UnixMilli(n)
	case *format.NanoSeconds:
		t = time.Unix(0, n)
	default:
		t = time.UnixMicro(n)
	}
	if !ts.IsAdjustedToUTC {
		return t.UTC().Format("2006-01-02T15:04:05.999999999")
	}
	return t.UTC().Format(time.RFC3339Nano)
}
