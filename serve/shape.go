package serve

// Shapes: the Parquet form of a snapshot's schema, the verdict of whether a
// stored file already has it, and the warm-up that decides a listing's
// files ahead.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

// Every data file of a snapshot is served in the snapshot's schema, so
// that a reader globbing a version's files (DuckDB, Polars, pyarrow)
// finds one schema in all of them: the columns in the schema's order with
// its names, a column a file lacks (written before an ADD COLUMN, or
// appended without a nullable column) as all nulls, a column the schema
// no longer has (dropped under column mapping, CDF's _change_type) left
// out, and integer and decimal annotations widened where the table's
// type widened within the same physical type. With PartitionsInFiles,
// partition columns are also served in every file, as constants. A file
// that already has exactly these columns is served byte for byte.

// snapShape is the Parquet form of a snapshot's schema: one shape column
// per top-level field, in schema order, partition columns marked.
type snapShape struct {
	cols  []pqfile.ShapeColumn
	parts []*delta.StructField // per column: its partition field, or nil
	sum   string               // fingerprint of the shape, for cache keys
	whole *pqfile.Shape        // the shape of every file, when it has no constants
}

// shapeOf returns the shape of snap's schema; withParts keeps partition
// columns (as constants), else they are left out (the directory names
// carry them).
func shapeOf(snap *delta.Snapshot, withParts bool) (*snapShape, error) {
	md := snap.Metadata()
	schema, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	partFields, err := md.PartitionSchema()
	if err != nil {
		return nil, err
	}
	isPart := map[string]*delta.StructField{}
	for _, f := range partFields {
		isPart[f.Name] = f
	}
	s := &snapShape{}
	for _, f := range schema.Fields {
		p := isPart[f.Name]
		if p != nil && !withParts {
			continue
		}
		if f.Type.String() == "void" {
			continue // Spark writes no column for a void (NullType) field
		}
		// A type without a Parquet form here (variant, an unknown one) is
		// served as each file stores it; only a file without it fails.
		els, _ := parquetElements(f.Name, f.Type)
		s.cols = append(s.cols, pqfile.ShapeColumn{Name: f.Name, Schema: els})
		s.parts = append(s.parts, p)
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\n%v\n%s", md.SchemaString, withParts, md.PartitionColumns))
	s.sum = hex.EncodeToString(h[:12])
	if !s.hasParts() {
		s.whole = &pqfile.Shape{Columns: s.cols, Key: s.sum}
	}
	return s, nil
}

// forFile returns the shape of f: the snapshot's, with f's partition
// values as the constants of the partition columns.
func (s *snapShape) forFile(f *delta.LiveFile) (*pqfile.Shape, error) {
	if s.whole != nil {
		return s.whole, nil
	}
	out := &pqfile.Shape{Columns: make([]pqfile.ShapeColumn, len(s.cols)), Key: s.sum}
	for i, c := range s.cols {
		out.Columns[i] = c
		p := s.parts[i]
		if p == nil {
			continue
		}
		v, err := delta.ParsePartitionValue(p.Type, f.PartitionValues[p.Name])
		if err != nil {
			return nil, fmt.Errorf("partition column %q of %s: %w", p.Name, f.Key, err)
		}
		k, err := plainConstant(p.Type, v)
		if err != nil {
			return nil, fmt.Errorf("partition column %q of %s: %w", p.Name, f.Key, err)
		}
		out.Columns[i].Const = k
	}
	return out, nil
}

// hasParts reports whether the shape serves partition columns.
func (s *snapShape) hasParts() bool {
	for _, p := range s.parts {
		if p != nil {
			return true
		}
	}
	return false
}

// parquetElements returns the Parquet schema elements of a column of
// Delta type t, as Spark writes them: depth first, optional, 3-level
// lists and maps.
func parquetElements(name string, t delta.DataType) ([]format.SchemaElement, error) {
	opt := thrift.New(format.Optional)
	switch t := t.(type) {
	case delta.DecimalType:
		return []format.SchemaElement{decimalElement(name, t)}, nil
	case delta.PrimitiveType:
		el, err := primitiveElement(name, t.Name)
		return []format.SchemaElement{el}, err
	case *delta.StructType:
		out := []format.SchemaElement{{Name: name, RepetitionType: opt, NumChildren: thrift.New(int32(len(t.Fields)))}}
		for _, f := range t.Fields {
			els, err := parquetElements(f.Name, f.Type)
			if err != nil {
				return nil, err
			}
			out = append(out, els...)
		}
		return out, nil
	case *delta.ArrayType:
		els, err := parquetElements("element", t.ElementType)
		if err != nil {
			return nil, err
		}
		return append([]format.SchemaElement{
			{Name: name, RepetitionType: opt, NumChildren: thrift.New(int32(1)),
				ConvertedType: thrift.New(deprecated.List), LogicalType: format.LogicalType{Value: &format.ListType{}}},
			{Name: "list", RepetitionType: thrift.New(format.Repeated), NumChildren: thrift.New(int32(1))},
		}, els...), nil
	case *delta.MapType:
		key, err := parquetElements("key", t.KeyType)
		if err != nil {
			return nil, err
		}
		key[0].RepetitionType = thrift.New(format.Required)
		val, err := parquetElements("value", t.ValueType)
		if err != nil {
			return nil, err
		}
		out := []format.SchemaElement{
			{Name: name, RepetitionType: opt, NumChildren: thrift.New(int32(1)),
				ConvertedType: thrift.New(deprecated.Map), LogicalType: format.LogicalType{Value: &format.MapType{}}},
			{Name: "key_value", RepetitionType: thrift.New(format.Repeated), NumChildren: thrift.New(int32(2))},
		}
		return append(append(out, key...), val...), nil
	}
	return nil, fmt.Errorf("type %s has no Parquet form here", t)
}

// primitiveElement returns the optional leaf of a Delta primitive type.
func primitiveElement(name, typ string) (format.SchemaElement, error) {
	el := format.SchemaElement{Name: name, RepetitionType: thrift.New(format.Optional)}
	set := func(pt format.Type, lt format.LogicalTypeValue, ct deprecated.ConvertedType, hasCT bool) {
		el.Type = thrift.New(pt)
		if lt != nil {
			el.LogicalType = format.LogicalType{Value: lt}
		}
		if hasCT {
			el.ConvertedType = thrift.New(ct)
		}
	}
	switch typ {
	case "string":
		set(format.ByteArray, &format.StringType{}, deprecated.UTF8, true)
	case "binary":
		set(format.ByteArray, nil, 0, false)
	case "boolean":
		set(format.Boolean, nil, 0, false)
	case "byte":
		set(format.Int32, &format.IntType{BitWidth: 8, IsSigned: true}, deprecated.Int8, true)
	case "short":
		set(format.Int32, &format.IntType{BitWidth: 16, IsSigned: true}, deprecated.Int16, true)
	case "integer":
		set(format.Int32, nil, 0, false)
	case "long":
		set(format.Int64, nil, 0, false)
	case "float":
		set(format.Float, nil, 0, false)
	case "double":
		set(format.Double, nil, 0, false)
	case "date":
		set(format.Int32, &format.DateType{}, deprecated.Date, true)
	case "timestamp":
		set(format.Int64, &format.TimestampType{IsAdjustedToUTC: true, Unit: format.TimeUnit{Value: &format.MicroSeconds{}}}, deprecated.TimestampMicros, true)
	case "timestamp_ntz":
		set(format.Int64, &format.TimestampType{IsAdjustedToUTC: false, Unit: format.TimeUnit{Value: &format.MicroSeconds{}}}, 0, false)
	default:
		return el, fmt.Errorf("type %s has no Parquet form here", typ)
	}
	return el, nil
}

// decimalElement returns the optional leaf of decimal(p,s): INT32 up to
// 9 digits, INT64 up to 18, else the smallest FIXED_LEN_BYTE_ARRAY.
func decimalElement(name string, d delta.DecimalType) format.SchemaElement {
	el := format.SchemaElement{Name: name, RepetitionType: thrift.New(format.Optional),
		ConvertedType: thrift.New(deprecated.Decimal),
		Precision:     thrift.New(int32(d.Precision)), Scale: thrift.New(int32(d.Scale)),
		LogicalType: format.LogicalType{Value: &format.DecimalType{Precision: int32(d.Precision), Scale: int32(d.Scale)}}}
	switch {
	case d.Precision <= 9:
		el.Type = thrift.New(format.Int32)
	case d.Precision <= 18:
		el.Type = thrift.New(format.Int64)
	default:
		el.Type = thrift.New(format.FixedLenByteArray)
		el.TypeLength = thrift.New(int32(decimalBytes(d.Precision)))
	}
	return el
}

// decimalBytes is the fewest bytes whose two's complement holds every
// unscaled value of p digits.
func decimalBytes(p int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	return (limit.BitLen() + 1 + 7) / 8 // sign bit included
}

// plainConstant returns the PLAIN encoding of partition value v (as
// delta.ParsePartitionValue gives it) for the leaf of type t.
func plainConstant(t delta.DataType, v any) (*pqfile.Constant, error) {
	if v == nil {
		return &pqfile.Constant{Null: true}, nil
	}
	if d, ok := t.(delta.DecimalType); ok {
		return decimalConstant(d, v)
	}
	le32 := func(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
	le64 := func(x uint64) []byte { return binary.LittleEndian.AppendUint64(nil, x) }
	var b []byte
	switch x := v.(type) {
	case string:
		b = []byte(x)
	case []byte:
		b = x
	case bool:
		b = []byte{0}
		if x {
			b[0] = 1
		}
	case int64:
		if t.String() == "long" {
			b = le64(uint64(x))
		} else {
			b = le32(uint32(int32(x)))
		}
	case float64:
		if t.String() == "float" {
			b = le32(math.Float32bits(float32(x)))
		} else {
			b = le64(math.Float64bits(x))
		}
	case time.Time:
		switch t.String() {
		case "date":
			days := x.Unix() / 86400
			if x.Unix() < 0 && x.Unix()%86400 != 0 {
				days--
			}
			b = le32(uint32(int32(days)))
		default: // timestamp (UTC) and timestamp_ntz (wall clock as UTC fields)
			b = le64(uint64(x.UnixMicro()))
		}
	default:
		return nil, fmt.Errorf("partition value of Go type %T", v)
	}
	return &pqfile.Constant{Plain: b}, nil
}

// decimalConstant returns the PLAIN encoding of a decimal partition value
// in decimalElement's physical type.
func decimalConstant(d delta.DecimalType, v any) (*pqfile.Constant, error) {
	r, ok := v.(*big.Rat)
	if !ok {
		return nil, fmt.Errorf("decimal partition value of Go type %T", v)
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow))
	if !scaled.IsInt() {
		return nil, fmt.Errorf("decimal partition value %s has more than %d fraction digits", r.FloatString(d.Scale+2), d.Scale)
	}
	u := scaled.Num()
	switch {
	case d.Precision <= 9:
		return &pqfile.Constant{Plain: binary.LittleEndian.AppendUint32(nil, uint32(int32(u.Int64())))}, nil
	case d.Precision <= 18:
		return &pqfile.Constant{Plain: binary.LittleEndian.AppendUint64(nil, uint64(u.Int64()))}, nil
	}
	return &pqfile.Constant{Plain: twosComplement(u, decimalBytes(d.Precision))}, nil
}

// twosComplement returns u as n big-endian two's complement bytes.
func twosComplement(u *big.Int, n int) []byte {
	out := make([]byte, n)
	x := new(big.Int).Set(u)
	if x.Sign() < 0 {
		x.Add(x, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	x.FillBytes(out)
	return out
}

type shapeKey struct {
	schema, parts string
	withParts     bool
}

// maxShapes bounds the cache: a mount sees few schemas at once.
const maxShapes = 256

// cachedShape returns shapeOf(snap, withParts), from the cache.
func (c *shapeCache) cachedShape(snap *delta.Snapshot, withParts bool) (*snapShape, error) {
	md := snap.Metadata()
	k := shapeKey{md.SchemaString, strings.Join(md.PartitionColumns, "\x00"), withParts}
	if s := c.get(k); s != nil {
		return s, nil
	}
	s, err := shapeOf(snap, withParts)
	if err != nil {
		return nil, err
	}
	c.put(k, s)
	return s, nil
}

// verdictCache holds, per stored file and shape, how the file is served:
// as stored, or rewritten with its size when known. A file listed in many
// versions has its footer read once, and a rewritten one its layout made
// once for its stats (its patch may be long gone from memory). At most
// verdictBytes an entry (a 128-bit hash of the file's identity and the
// shape, and the verdict); cleared when full.
type verdictCache struct {
	mu  sync.Mutex
	m   map[verdictID]int64 // guarded by mu: servedAsStored, sizeUnknown or the rewritten size
	max int
}

// The values of a verdict that are not a rewritten file's size.
const (
	servedAsStored = -1 // the stored bytes, the stored size
	sizeUnknown    = -2 // rewritten, its size not computed yet
)

// verdictID is a 128-bit hash of what a verdict derives from (verdictKey).
type verdictID struct{ a, b uint64 }

// maxVerdicts bounds the verdicts of all the tables of a mount (Caches;
// the keys name the store): 1 Mi files, at most 64 MiB. verdictBytes is
// what one costs at most (24 bytes of key and value, the map's control
// bytes and its growth: 53 measured at 64 Ki, TestCacheUnitsCoverTheHeap).
const (
	maxVerdicts  = 1 << 20
	verdictBytes = 64
)

func newVerdictCache(n int) *verdictCache { return &verdictCache{m: map[verdictID]int64{}, max: n} }

// clear drops every verdict (Caches.Close), the map's memory too.
func (v *verdictCache) clear() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.m = map[verdictID]int64{}
}

func (v *verdictCache) len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.m)
}

func (v *verdictCache) get(k verdictID) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, ok := v.m[k]
	return n, ok
}

func (v *verdictCache) put(k verdictID, n int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) >= v.max {
		clear(v.m)
	}
	v.m[k] = n
}

// verdictKey identifies a stored file's bytes (its store, path, size,
// modification time), its deletion vector and its snapshot's shape and column mapping:
// everything its served form derives from.
func verdictKey(store string, f *delta.LiveFile, s *snapShape, mapping string) verdictID {
	return addVerdictKey(store, f.Key, f.Add, s, mapping)
}

// addVerdictKey is verdictKey of the stored file key of the add a.
func addVerdictKey(store, key string, a *delta.Add, s *snapShape, mapping string) verdictID {
	var id [2]uint64
	for i, seed := range keySeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteString(store)
		h.WriteByte(0)
		h.WriteString(key)
		var n [16]byte
		binary.LittleEndian.PutUint64(n[:8], uint64(a.Size))
		binary.LittleEndian.PutUint64(n[8:], uint64(a.ModificationTime))
		h.Write(n[:])
		h.WriteString(s.sum)
		h.WriteByte(0)
		h.WriteString(mapping)
		h.WriteByte(0)
		if a.DeletionVector != nil {
			h.WriteString(a.DeletionVector.UniqueID())
		}
		id[i] = h.Sum64()
	}
	return verdictID{id[0], id[1]}
}

// warmWorkers bounds the footers a table reads ahead at once: enough to
// keep a listing of an object store's files ahead of its stats.
const warmWorkers = 16

// localWarmWorkers is the same for a local table. Its footer reads cost
// CPU when the page cache holds them and disk latency when it does not;
// a listing answers a file's stat from READDIRPLUS only once the warm-up
// has decided it, so the warm-up must keep ahead of ls. Eight workers
// keep a cold `ls -lR` of a large snapshot fastest even on two cores
// (the disk's latency overlaps), and cost a warm one nothing.
const localWarmWorkers = 8

// Warm finds, in the background, how each stored file of adds is served
// (as stored or rewritten, and the rewritten size), so that the stats
// that follow find it (nodes.Files). Files with deletion vectors (whose
// size needs their rows read) and files already decided cost nothing.
//
// An object store's table reads up to warmWorkers footers at once, for
// verdicts only (a rewrite would fetch blocks of every file listed); a
// warm-up that finds every worker busy is dropped, never queued. A local
// table's warm-up runs localWarmWorkers workers that also size
// footer-only rewrites (partition columns from the splice alone, column
// mapping by laying the rewrite out), and a new listing's warm-up
// replaces the one before: a listing walks one directory at a time.
func (t *Table) Warm(snap *delta.Snapshot, adds []*delta.Add) {
	if len(adds) < 2 {
		return
	}
	shape, err := t.shape(snap)
	if err != nil {
		return
	}
	if t.root != nil {
		t.warmLocal(snap, shape, adds)
		return
	}
	if shape.hasParts() || Mapped(snap) {
		return
	}
	// Each worker takes the next add and makes its LiveFile itself: nothing
	// is held per file beyond the caller's slice, however large the
	// directory.
	var next atomic.Int64
	for range min(warmWorkers, len(adds)) {
		select {
		case t.warmSem <- struct{}{}:
		default:
			continue
		}
		t.background(warmTimeout, func(ctx context.Context) {
			defer func() { <-t.warmSem }()
			for i := next.Add(1) - 1; i < int64(len(adds)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				t.warmOne(ctx, snap, shape, adds[i])
			}
		})
	}
}

// Prepare computes, in the background, the shape snap's files are served
// in, and has pqfile build its footer codecs (pqfile.Prepare), so that
// the first stat of one of snap's files (or of another version's with
// the same schema) finds both made: in a fresh mount process they are
// most of the first stat's time. It reads nothing.
func (t *Table) Prepare(snap *delta.Snapshot) {
	t.background(warmTimeout, func(context.Context) {
		pqfile.Prepare()
		t.shape(snap) // an error is the stat's to report
	})
}

// warmTimeout bounds one warm-up.
const warmTimeout = 5 * time.Minute

// warmLocal is Warm for a local table: it cancels the warm-up before it
// and runs localWarmWorkers workers once that one's have stopped.
func (t *Table) warmLocal(snap *delta.Snapshot, shape *snapShape, adds []*delta.Add) {
	workers := min(localWarmWorkers, len(adds))
	if workers <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(t.bg, warmTimeout)
	t.warmMu.Lock()
	if t.warmCancel != nil {
		t.warmCancel()
	}
	t.warmCancel = cancel
	t.warmMu.Unlock()
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	t.bgWG.Add(workers + 1)
	for range workers {
		go func() {
			defer t.bgWG.Done()
			defer wg.Done()
			select {
			case t.warmSem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-t.warmSem }()
			for i := next.Add(1) - 1; i < int64(len(adds)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				t.warmOne(ctx, snap, shape, adds[i])
			}
		}()
	}
	go func() { defer t.bgWG.Done(); wg.Wait(); cancel() }()
}

// warmOne decides the stored file of a unless it is known to be rewritten
// or decided already; an error is the stat's to report.
func (t *Table) warmOne(ctx context.Context, snap *delta.Snapshot, shape *snapShape, a *delta.Add) {
	if a.DeletionVector != nil {
		return
	}
	if _, ok := t.KnownSize(snap, a); ok {
		return
	}
	// A file served in a shape without constants needs no partition values
	// (LiveFileOf makes a map of them for each file).
	f := delta.LiveFile{Add: a}
	var err error
	if shape.hasParts() || Mapped(snap) {
		f, err = snap.LiveFileOf(a)
	} else {
		f.Key, err = snap.DataKey(a)
	}
	if err == nil {
		t.Size(ctx, snap, &f)
	}
}
