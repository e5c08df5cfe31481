package pqfile

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrLimit reports a file that breaks one of the package's named limits
// (a footer, schema, page or row count larger than deltafs accepts, or a
// page that needs more memory to decode than the validation budget).
// Its message names the limit.
var ErrLimit = errors.New("pqfile: over a limit")

// Limits bound what the footer of a Parquet file deltafs did not write
// may declare. CheckFooter holds every footer to them on its encoded
// bytes, before parquet-go or any decoder of this package sees it:
// parquet-go builds its column tree in time and memory that grow with
// the square of the schema's depth (a 100,000-deep chain of groups asked
// for 80 GB), and allocates what counts claim.
type Limits struct {
	// MaxFooterBytes bounds the encoded footer (default 64 MiB; a footer
	// of 100 row groups of 10,000 columns is about 150 MB).
	MaxFooterBytes int64
	// MaxSchemaElements bounds the schema's elements, groups and leaves
	// (default 100,000).
	MaxSchemaElements int
	// MaxSchemaDepth bounds the nesting of the schema (default
	// MaxSchemaDepth, 64; the root is at depth 0).
	MaxSchemaDepth int
	// MaxRowGroups bounds the row groups (default 1,000,000).
	MaxRowGroups int
	// MaxGroupRows bounds one row group's num_rows (default 2^31-1); the
	// row groups must add up to the file's num_rows exactly.
	MaxGroupRows int64
}

// DefaultLimits are the limits unless SetLimits changed them.
var DefaultLimits = Limits{
	MaxFooterBytes:    64 << 20,
	MaxSchemaElements: 100_000,
	MaxSchemaDepth:    MaxSchemaDepth,
	MaxRowGroups:      1_000_000,
	MaxGroupRows:      1<<31 - 1,
}

var limits atomic.Pointer[Limits]

// SetLimits replaces the process's limits (a command's flags); zero
// fields keep their defaults. A depth above MaxSchemaDepth is lowered to
// it (the schema tree refuses deeper schemas anyway).
func SetLimits(l Limits) {
	d := DefaultLimits
	if l.MaxFooterBytes > 0 {
		d.MaxFooterBytes = l.MaxFooterBytes
	}
	if l.MaxSchemaElements > 0 {
		d.MaxSchemaElements = l.MaxSchemaElements
	}
	if l.MaxSchemaDepth > 0 {
		d.MaxSchemaDepth = min(l.MaxSchemaDepth, MaxSchemaDepth)
	}
	if l.MaxRowGroups > 0 {
		d.MaxRowGroups = l.MaxRowGroups
	}
	if l.MaxGroupRows > 0 {
		d.MaxGroupRows = l.MaxGroupRows
	}
	limits.Store(&d)
}

// CurrentLimits returns the limits in force.
func CurrentLimits() Limits {
	if l := limits.Load(); l != nil {
		return *l
	}
	return DefaultLimits
}

func limitf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLimit, fmt.Sprintf(format, args...))
}

// Thrift field ids of the footer structures checkLimits reads.
const (
	idFileSchema       = 2 // FileMetaData.schema
	idFileNumRows      = 3 // FileMetaData.num_rows
	idSchemaNumChild   = 5 // SchemaElement.num_children
	idRowGroupNumRows  = 3 // RowGroup.num_rows
	idFileRowGroupsLim = 4 // FileMetaData.row_groups
)

// checkLimits walks the encoded footer b (already known to be
// well-formed Thrift) and holds it to l: its size, the schema's elements
// and depth (simulating the num_children encoding), the row groups'
// number and rows, and that they add up to the file's rows.
func checkLimits(b thriftBuf, l Limits) error {
	if int64(len(b)) > l.MaxFooterBytes {
		return limitf("footer of %d bytes is over the limit of %d bytes (--max-parquet-footer)", len(b), l.MaxFooterBytes)
	}
	var fileRows, groupRows int64
	var haveRows bool
	var groups int
	_, err := b.skipStruct(0, 0, func(f tfield, depth int) (int, error) {
		switch {
		case f.id == idFileSchema && f.typ == tList:
			return b.checkSchema(f.value, depth+1, l)
		case f.id == idFileNumRows && f.typ == tI64:
			v, end, err := b.uvarint(f.value)
			fileRows, haveRows = int64(v>>1)^-int64(v&1), true
			return end, err
		case f.id == idFileRowGroupsLim && f.typ == tList:
			return b.walkList(f.value, depth+1, func(i, off, depth int) (int, error) {
				groups++
				if groups > l.MaxRowGroups {
					return 0, limitf("more than %d row groups (the limit)", l.MaxRowGroups)
				}
				return b.skipStruct(off, depth, func(f tfield, _ int) (int, error) {
					if f.id != idRowGroupNumRows || f.typ != tI64 {
						return -1, nil
					}
					v, end, err := b.uvarint(f.value)
					n := int64(v>>1) ^ -int64(v&1)
					if err == nil && (n < 0 || n > l.MaxGroupRows) {
						return 0, limitf("row group %d says %d rows, over the limit of %d", i, n, l.MaxGroupRows)
					}
					groupRows += n // each at most 2^62: no overflow below 2^62 groups
					return end, err
				})
			})
		}
		return -1, nil
	})
	if err != nil {
		return err
	}
	if haveRows && fileRows != groupRows {
		return fmt.Errorf("%w: the footer says %d rows, its row groups %d", ErrCorrupt, fileRows, groupRows)
	}
	return nil
}

// checkSchema walks the schema list at off: at most l.MaxSchemaElements
// elements, nesting (by num_children) at most l.MaxSchemaDepth.
func (b thriftBuf) checkSchema(off, depth int, l Limits) (int, error) {
	var stack []int64 // children left at each open group
	return b.walkList(off, depth, func(i, off, depth int) (int, error) {
		if i >= l.MaxSchemaElements {
			return 0, limitf("schema of more than %d elements (the limit, --max-parquet-columns)", l.MaxSchemaElements)
		}
		var kids int64
		end, err := b.skipStruct(off, depth, func(f tfield, _ int) (int, error) {
			if f.id != idSchemaNumChild || f.typ != tI32 {
				return -1, nil
			}
			v, end, err := b.uvarint(f.value)
			kids = int64(int32(uint32(v>>1) ^ -uint32(v&1)))
			return end, err
		})
		if err != nil {
			return 0, err
		}
		for len(stack) > 0 && stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			stack[len(stack)-1]--
		}
		if kids > 0 {
			if len(stack) >= l.MaxSchemaDepth {
				return 0, limitf("schema nested deeper than %d levels at element %d (the limit)", l.MaxSchemaDepth, i)
			}
			stack = append(stack, kids)
		}
		return end, nil
	})
}
