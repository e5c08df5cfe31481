package serve

// The files of @changes ranges: a data or CDC file's change rows, in the
// range's last schema, with the change feed's metadata columns.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

// A change file of a table's change data feed (delta.Table.Changes) is
// served as a rewritten file: the data or CDC file it names with only its
// change rows, in the schema of the range's newest snapshot, its partition
// values as columns, and three columns of constants after the table's:
// _change_type (a CDC file's own column instead), _commit_version and
// _commit_timestamp, as Spark's table_changes gives them. Its patch goes
// to the disk cache, keyed by what it derives from, like every rewrite.

// The feed's metadata columns.
const (
	ChangeTypeColumn      = "_change_type"
	CommitVersionColumn   = "_commit_version"
	CommitTimestampColumn = "_commit_timestamp"
)

// ChangeFileName is the name the i-th change file of a range is given in
// the mount's @changes tree and by deltafs changes --out: its version,
// its place in the range and its file's name, so that names sort by
// version within a version's files and never collide.
func ChangeFileName(i int, cf delta.ChangeFile) string {
	name := fmt.Sprintf("v%d-%d-%s", cf.Version, i, path.Base(cf.Key))
	if !strings.HasSuffix(name, ".parquet") {
		name += ".parquet"
	}
	return name
}

// OpenChange returns the bytes of change file cf of a range whose newest
// snapshot is end; keep and drop are its rows (delta.Table.Rows).
func (t *Table) OpenChange(ctx context.Context, end *delta.Snapshot, cf delta.ChangeFile, keep, drop *roaring64.Bitmap) (Content, error) {
	l, df, f, err := t.changeEntry(ctx, end, cf, keep, drop)
	if err != nil {
		return nil, err
	}
	return t.composite(ctx, f, l, df)
}

// ChangeSize returns the exact size change file cf is served with
// (OpenChange's bytes), building its patch once.
func (t *Table) ChangeSize(ctx context.Context, end *delta.Snapshot, cf delta.ChangeFile, keep, drop *roaring64.Bitmap) (int64, error) {
	l, df, _, err := t.changeEntry(ctx, end, cf, keep, drop)
	if err != nil {
		return 0, err
	}
	df.Close()
	return l.Size(), nil
}

// changeEntry returns the layout and open patch of change file cf, and the
// stored file it reads.
func (t *Table) changeEntry(ctx context.Context, end *delta.Snapshot, cf delta.ChangeFile, keep, drop *roaring64.Bitmap) (*pqfile.Layout, patchReader, *delta.LiveFile, error) {
	if cf.Size <= 0 { // a remove that does not give its size
		o, err := t.store.Stat(ctx, cf.Key)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("change file %s of version %d: %w", cf.Key, cf.Version, err)
		}
		cf.Size = o.Size
	}
	f := &delta.LiveFile{Key: cf.Key, PartitionValues: cf.PartitionValues,
		Add: &delta.Add{Path: cf.Path, Size: cf.Size, PartitionValues: cf.PartitionValues}}
	rename, mapping, err := renameFor(end)
	if err != nil {
		return nil, nil, nil, err
	}
	shape, err := t.changeShape(end, cf)
	if err != nil {
		return nil, nil, nil, err
	}
	key := strings.Join([]string{"deltafs-change/v1", t.store.String(), cf.Key, strconv.FormatInt(cf.Size, 10),
		strconv.FormatInt(cf.Version, 10), strconv.FormatInt(cf.Timestamp.UnixMicro(), 10), cf.ChangeType,
		dvID(cf.Deleted), pairID(cf.Pair), mapping, end.Metadata().SchemaString, partitionKey(cf.PartitionValues)}, "|")
	var buildErr error // the build's own error, named without the cache key
	build := t.progress(end, f, func(w io.Writer) (err error) {
		defer func() { buildErr = err }()
		src, err := t.openStored(ctx, f)
		if err != nil {
			return err
		}
		defer src.Close()
		ra := ctxReaderAt{ctx, src}
		deleted, err := changeDeleted(ra, cf.Size, keep, drop)
		if err != nil {
			return fmt.Errorf("change file %s: %w", cf.Key, err)
		}
		plan, err := pqfile.NewShapedPlan(ra, cf.Size, deleted, rename, shape)
		if err != nil {
			return fmt.Errorf("change file %s: %w", cf.Key, err)
		}
		return pqfile.WriteEntry(w, plan)
	})
	l, df, err := t.entry(ctx, key, cf.Size, build)
	if err != nil {
		if buildErr != nil {
			err = buildErr
		}
		return nil, nil, nil, fmt.Errorf("changes of version %d: %w", cf.Version, err)
	}
	return l, df, f, nil
}

// changeDeleted returns the rows of a file of size bytes to leave out:
// drop, or every row not in keep (nil both: none).
func changeDeleted(src io.ReaderAt, size int64, keep, drop *roaring64.Bitmap) (*roaring64.Bitmap, error) {
	if keep == nil {
		if drop == nil {
			return roaring64.New(), nil
		}
		return drop, nil
	}
	n, err := pqfile.FooterNumRows(src, size)
	if err != nil {
		return nil, err
	}
	out := roaring64.New()
	out.AddRange(0, uint64(n))
	out.AndNot(keep)
	return out, nil
}

// changeShape returns the shape of change file cf: end's columns with its
// partition values, then the feed's metadata columns.
func (t *Table) changeShape(end *delta.Snapshot, cf delta.ChangeFile) (*pqfile.Shape, error) {
	s, err := t.caches.shapes.cachedShape(end, true)
	if err != nil {
		return nil, err
	}
	base, err := s.forFile(&delta.LiveFile{Key: cf.Key, PartitionValues: cf.PartitionValues})
	if err != nil {
		return nil, err
	}
	cols := append([]pqfile.ShapeColumn(nil), base.Columns...)
	str, err := primitiveElement(ChangeTypeColumn, "string")
	if err != nil {
		return nil, err
	}
	typ := pqfile.ShapeColumn{Name: ChangeTypeColumn, Schema: []format.SchemaElement{str}}
	if cf.ChangeType != "" {
		typ.Const = &pqfile.Constant{Plain: []byte(cf.ChangeType)}
	}
	ver, err := constColumn(CommitVersionColumn, delta.PrimitiveType{Name: "long"}, cf.Version)
	if err != nil {
		return nil, err
	}
	ts, err := constColumn(CommitTimestampColumn, delta.PrimitiveType{Name: "timestamp"}, cf.Timestamp.UTC())
	if err != nil {
		return nil, err
	}
	return &pqfile.Shape{Columns: append(cols, typ, ver, ts)}, nil
}

// constColumn is a column named name of type t holding v in every row.
func constColumn(name string, t delta.PrimitiveType, v any) (pqfile.ShapeColumn, error) {
	el, err := primitiveElement(name, t.Name)
	if err != nil {
		return pqfile.ShapeColumn{}, err
	}
	k, err := plainConstant(t, v)
	if err != nil {
		return pqfile.ShapeColumn{}, err
	}
	return pqfile.ShapeColumn{Name: name, Schema: []format.SchemaElement{el}, Const: k}, nil
}

func dvID(d *delta.DeletionVector) string {
	if d == nil {
		return ""
	}
	return d.UniqueID()
}

func pairID(p *delta.DVPair) string {
	if p == nil {
		return ""
	}
	return "pair:" + dvID(p.Removed) + ">" + dvID(p.Added)
}

// partitionKey is a stable text of partition values, for cache keys.
func partitionKey(pv map[string]*string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(pv)) {
		b.WriteString(strconv.Quote(k))
		if v := pv[k]; v != nil {
			b.WriteString("=" + strconv.Quote(*v))
		}
		b.WriteByte(';')
	}
	return b.String()
}
