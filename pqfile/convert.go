package pqfile

import (
	"bytes"
	"fmt"
	"math/big"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// A leaf whose table type widened to another physical type (the protocol's "Type Widening":
// integer to long or double, float to double, date to timestamp_ntz, decimals to wider ones) is
// served converted: its values are decoded, widened and encoded again in the table's type, one
// column chunk per row group, its deleted rows left out. The other columns of the row group are
// untouched.

// converter widens the values of one leaf; the result keeps the value's levels.
type converter func(v parquet.Value) (parquet.Value, error)

// convLeaf is a converted leaf: how to widen its values, and the writer schema (the source
// leaf's nesting, the table's physical type) its chunks are encoded with.
type convLeaf struct {
	conv   converter
	schema *parquet.Schema
}

// widening returns the converter from the source leaf el to the shape's leaf want (different
// physical types), or nil when the pair is not a widening this package serves.
func widening(el, want *format.SchemaElement) converter {
	from, to := el.Type.V, want.Type.V
	_, _, fromDec := decimalParams(el)
	wp, ws, toDec := decimalParams(want)
	_, fromDate := el.LogicalType.Value.(*format.DateType)
	fromInt := from == format.Int32 && !fromDec && !fromDate
	switch {
	case toDec && (fromDec || fromInt || (from == format.Int64 && !fromDec)):
		return decimalWidening(el, to, wp, ws, int(want.TypeLength.V))
	case fromInt && to == format.Int64 && !toDec:
		return func(v parquet.Value) (parquet.Value, error) {
			return relevel(parquet.Int64Value(int64(v.Int32())), v), nil
		}
	case fromInt && to == format.Double:
		return func(v parquet.Value) (parquet.Value, error) {
			return relevel(parquet.DoubleValue(float64(v.Int32())), v), nil
		}
	case from == format.Float && to == format.Double:
		return func(v parquet.Value) (parquet.Value, error) {
			return relevel(parquet.DoubleValue(float64(v.Float())), v), nil
		}
	case fromDate && to == format.Int64:
		if ts, ok := want.LogicalType.Value.(*format.TimestampType); ok && !ts.IsAdjustedToUTC && ts.Unit.Value != nil {
			perDay := int64(86400) * unitsPerSecond(ts)
			return func(v parquet.Value) (parquet.Value, error) {
				return relevel(parquet.Int64Value(int64(v.Int32())*perDay), v), nil
			}
		}
	}
	return nil
}

// unitsPerSecond returns how many of a timestamp's units make a second.
func unitsPerSecond(ts *format.TimestampType) int64 {
	switch ts.Unit.Value.(type) {
	case *format.MilliSeconds:
		return 1e3
	case *format.NanoSeconds:
		return 1e9
	}
	return 1e6
}

// decimalWidening converts an integer or decimal leaf el to DECIMAL(p, s) stored as to (INT32,
// INT64, or FIXED_LEN_BYTE_ARRAY of width bytes).
func decimalWidening(el *format.SchemaElement, to format.Type, p, s, width int) converter {
	_, fromScale, _ := decimalParams(el)
	if s < fromScale {
		return nil
	}
	mul := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s-fromScale)), nil)
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	from := el.Type.V
	return func(v parquet.Value) (parquet.Value, error) {
		u := unscaled(from, v)
		u.Mul(u, mul)
		if new(big.Int).Abs(u).Cmp(limit) >= 0 {
			return v, fmt.Errorf("%w: value %s does not fit DECIMAL(%d,%d)", ErrCorrupt, u, p, s)
		}
		switch to {
		case format.Int32:
			return relevel(parquet.Int32Value(int32(u.Int64())), v), nil
		case format.Int64:
			return relevel(parquet.Int64Value(u.Int64()), v), nil
		}
		b := make([]byte, width)
		x := new(big.Int).Set(u)
		if x.Sign() < 0 {
			x.Add(x, new(big.Int).Lsh(big.NewInt(1), uint(8*width)))
		}
		x.FillBytes(b)
		return relevel(parquet.FixedLenByteArrayValue(b), v), nil
	}
}

// unscaled returns the unscaled integer of a decimal or integer value stored as t.
func unscaled(t format.Type, v parquet.Value) *big.Int {
	switch t {
	case format.Int32:
		return big.NewInt(int64(v.Int32()))
	case format.Int64:
		return big.NewInt(v.Int64())
	}
	b := v.ByteArray()
	u := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return u
}

// relevel gives out the levels of v, in the converted chunk's only column.
func relevel(out, v parquet.Value) parquet.Value {
	return out.Level(v.RepetitionLevel(), v.DefinitionLevel(), 0)
}

// convSchema returns the writer schema of a converted leaf: the chain of the source leaf's
// ancestors (their repetitions, so the levels are the same) down to a leaf of physical type to.
func convSchema(t *SchemaTree, leafIdx int, to format.Type, width int) (*parquet.Schema, error) {
	var node parquet.Node
	switch to {
	case format.Int32:
		node = parquet.Leaf(parquet.Int32Type)
	case format.Int64:
		node = parquet.Leaf(parquet.Int64Type)
	case format.Double:
		node = parquet.Leaf(parquet.DoubleType)
	case format.FixedLenByteArray:
		node = parquet.Leaf(parquet.FixedLenByteArrayType(width))
	default:
		return nil, fmt.Errorf("%w: converting to %v", ErrUnsupported, to)
	}
	for i := leafIdx; i > 0; i = t.Nodes[i].Parent {
		n := &t.Nodes[i]
		switch {
		case n.Optional():
			node = parquet.Optional(node)
		case n.Repeated():
			node = parquet.Repeated(node)
		default:
			node = parquet.Required(node)
		}
		if n.Parent > 0 {
			node = parquet.Group{n.Name(): node}
		}
	}
	return parquet.NewSchema("converted", parquet.Group{t.Nodes[leafIdx].pathRoot(t).Name(): node}), nil
}

// pathRoot returns the top-level ancestor of n (n itself at the top).
func (n *SchemaNode) pathRoot(t *SchemaTree) *SchemaNode {
	for n.Parent > 0 {
		n = &t.Nodes[n.Parent]
	}
	return n
}

// convertedChunk encodes the values of the source chunk of row group rg, column col, widened by
// c and without the rows at the sorted relative indexes deleted, and returns its footer entry at
// pos and its bytes.
func (p *Plan) convertedChunk(file *parquet.File, rg, col int, c *convLeaf, deleted []uint64, pos int64) (format.ColumnChunk, []byte, error) {
	src := &p.meta.RowGroups[rg]
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, c.schema, parquet.Compression(reencodeCodec(src.Columns[col].MetaData.Codec)))
	rgw := w.BeginRowGroup()
	dst := rgw.ColumnWriters()
	chunk := file.RowGroups()[rg].ColumnChunks()[col]
	if err := filterColumnConv(dst[0], chunk, deleted, src.NumRows, c.conv); err != nil {
		return format.ColumnChunk{}, nil, err
	}
	if _, err := rgw.Commit(); err != nil {
		return format.ColumnChunk{}, nil, fmt.Errorf("encode converted column: %w", err)
	}
	if err := w.Close(); err != nil {
		return format.ColumnChunk{}, nil, fmt.Errorf("encode converted column: %w", err)
	}
	data := buf.Bytes()
	f, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil || len(f.meta.RowGroups) != 1 || len(f.meta.RowGroups[0].Columns) != 1 {
		return format.ColumnChunk{}, nil, fmt.Errorf("read back converted column: %v", err)
	}
	cc := f.meta.RowGroups[0].Columns[0]
	r, err := chunkRange(&cc, f.start)
	if err != nil {
		return format.ColumnChunk{}, nil, err
	}
	moveChunk(&cc, r, pos)
	return cc, data[r.off : r.off+r.n], nil
}

// decodeFile is the parquet-go view of a plan's source, opened once for all converted chunks.
type decodeFile struct {
	once sync.Once
	f    *parquet.File
	err  error
}

func (d *decodeFile) get(p *Plan) (*parquet.File, error) {
	d.once.Do(func() { d.f, d.err = p.openFile() })
	return d.f, d.err
}
