package checkpoint

import (
	"strings"

	"github.com/parquet-go/parquet-go"
)

// pqResolver finds the checkpoint's columns by path in the file schema and
// records every leaf it hands out, so that the reader can move them all to
// the next row group. Paths are relative to prefix.
type pqResolver struct {
	root   *parquet.Column
	prefix []string
	leaves map[string]*pqLeaf // by dotted path: one reader per column
}

func newPQResolver(root *parquet.Column) pqResolver {
	return pqResolver{root: root, leaves: make(map[string]*pqLeaf)}
}

// in returns a resolver for paths under the struct at name (relative).
func (s pqResolver) in(name ...string) pqResolver {
	s.prefix = s.path(name...)
	return s
}

func (s pqResolver) path(p ...string) []string {
	return append(s.prefix[:len(s.prefix):len(s.prefix)], p...)
}

func (s pqResolver) column(p ...string) *parquet.Column { return pqColumnAt(s.root, s.path(p...)...) }

// leaf returns the leaf at p; it is absent (all nulls) when the path does
// not exist or does not end at a leaf.
func (s pqResolver) leaf(p ...string) *pqLeaf {
	full := s.path(p...)
	name := strings.Join(full, ".")
	if l := s.leaves[name]; l != nil {
		return l
	}
	l := &pqLeaf{name: name}
	if c := pqColumnAt(s.root, full...); c != nil && c.Leaf() {
		l.col = c
		l.maxRep = c.MaxRepetitionLevel()
	}
	s.leaves[name] = l
	return l
}

// leafOf returns the leaf for column c, found under root.
func (s pqResolver) leafOf(c *parquet.Column) *pqLeaf {
	return pqResolver{root: s.root, leaves: s.leaves}.leaf(c.Path()...)
}

// pqColumnAt returns the column at path under root, or nil.
func pqColumnAt(root *parquet.Column, path ...string) *parquet.Column {
	c := root
	for _, name := range path {
		if c == nil {
			return nil
		}
		c = c.Column(name)
	}
	return c
}

// pqGroup tells whether a (nullable) struct column is set in a row: it is when
// the definition level of its probe leaf reaches the struct's own level.
// A group whose column is absent from the file is never set.
type pqGroup struct {
	probe *pqLeaf // a non-repeated leaf under the struct; nil when none
	def   int
}

// group finds the struct at p; its probe is the first of the preferred
// children that exists, else the first non-repeated leaf below it.
func (s pqResolver) group(p []string, preferred ...string) pqGroup {
	c := s.column(p...)
	if c == nil || c.Leaf() {
		return pqGroup{}
	}
	for _, name := range preferred {
		if ch := c.Column(name); ch != nil && ch.Leaf() && ch.MaxRepetitionLevel() == c.MaxRepetitionLevel() {
			return pqGroup{probe: s.leafOf(ch), def: c.MaxDefinitionLevel()}
		}
	}
	if l := pqFirstFlatLeaf(c, c.MaxRepetitionLevel()); l != nil {
		return pqGroup{probe: s.leafOf(l), def: c.MaxDefinitionLevel()}
	}
	return pqGroup{}
}

// pqFirstFlatLeaf returns the first leaf under c that is not repeated below c.
func pqFirstFlatLeaf(c *parquet.Column, rep int) *parquet.Column {
	if c.MaxRepetitionLevel() != rep {
		return nil
	}
	if c.Leaf() {
		return c
	}
	for _, ch := range c.Columns() {
		if l := pqFirstFlatLeaf(ch, rep); l != nil {
			return l
		}
	}
	return nil
}

// set reports whether the struct is non-null in the row.
func (g *pqGroup) set(rr *pqRowReader) bool {
	if g.probe == nil || rr.err != nil {
		return false
	}
	v, err := g.probe.first(rr.row)
	if err != nil {
		rr.fail(err)
		return false
	}
	return v.DefinitionLevel() >= g.def
}

// pqMap is a Parquet MAP column of strings. Both physical layouts writers
// use are accepted: MAP > repeated key_value|map|entries > key, value; the
// key and value leaves are taken by name, else by position.
type pqMap struct {
	key        *pqLeaf // nil: the column is absent (always null)
	val        *pqLeaf // nil: no value column (all values null)
	presentDef int     // definition level at which the map is non-null
	entryDef   int     // definition level at which the map has an entry
	valDef     int     // definition level at which a value is non-null
}

func (s pqResolver) mapCol(p ...string) pqMap {
	m := s.column(p...)
	if m == nil || m.Leaf() || m.Repeated() || len(m.Columns()) != 1 {
		return pqMap{}
	}
	kv := m.Columns()[0]
	if !kv.Repeated() || kv.Leaf() || len(kv.Columns()) == 0 {
		return pqMap{}
	}
	k, v := kv.Column("key"), kv.Column("value")
	if k == nil {
		k = kv.Columns()[0]
	}
	if v == nil && len(kv.Columns()) > 1 {
		v = kv.Columns()[1]
	}
	if !k.Leaf() || (v != nil && !v.Leaf()) {
		return pqMap{}
	}
	mc := pqMap{
		key:        s.leafOf(k),
		presentDef: m.MaxDefinitionLevel(),
		entryDef:   kv.MaxDefinitionLevel(),
	}
	if v != nil {
		mc.val = s.leafOf(v)
		mc.valDef = v.MaxDefinitionLevel()
	}
	return mc
}

// pqList is a Parquet LIST column of strings, in the standard 3-level
// layout (LIST > repeated list > element) or a legacy 2-level one
// (LIST > repeated element).
type pqList struct {
	elem       *pqLeaf // nil: the column is absent (always null)
	presentDef int
	entryDef   int
	elemDef    int
}

func (s pqResolver) listCol(p ...string) pqList {
	l := s.column(p...)
	if l == nil || l.Leaf() || l.Repeated() || len(l.Columns()) != 1 {
		return pqList{}
	}
	rep := l.Columns()[0]
	if !rep.Repeated() {
		return pqList{}
	}
	e := rep
	for !e.Leaf() && len(e.Columns()) == 1 {
		e = e.Columns()[0]
	}
	if !e.Leaf() || e.MaxRepetitionLevel() != rep.MaxRepetitionLevel() {
		return pqList{}
	}
	return pqList{
		elem:       s.leafOf(e),
		presentDef: l.MaxDefinitionLevel(),
		entryDef:   rep.MaxDefinitionLevel(),
		elemDef:    e.MaxDefinitionLevel(),
	}
}

// pqInterner shares the bytes of strings that repeat across rows (partition
// values, map keys, DV storage types) so that 100k adds of a partitioned
// table do not hold 100k copies of the same few values.
type pqInterner struct {
	strs map[string]string
	ptrs map[string]*string
	maps map[string]map[string]*string // by encoded entries (appendMapEntry)
}

const (
	internMaxLen     = 128     // longer strings are rarely repeated
	internMaxEntries = 1 << 16 // bound the table on high-cardinality values
)

func newPQInterner() *pqInterner {
	return &pqInterner{
		strs: make(map[string]string),
		ptrs: make(map[string]*string),
		maps: make(map[string]map[string]*string),
	}
}

func (in *pqInterner) str(b []byte) string {
	if len(b) > internMaxLen {
		return string(b)
	}
	if s, ok := in.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in.strs) < internMaxEntries {
		in.strs[s] = s
	}
	return s
}

// ptr returns a pointer to the string b; equal values share one pointer.
func (in *pqInterner) ptr(b []byte) *string {
	if p, ok := in.ptrs[string(b)]; ok {
		return p
	}
	p := new(string)
	*p = in.str(b)
	if len(b) <= internMaxLen && len(in.ptrs) < internMaxEntries {
		in.ptrs[*p] = p
	}
	return p
}

// ptrMap returns the map of the n entries encoded in enc (appendMapEntry);
// equal maps (the partition values of the files of one partition) share
// one Go map, which must not be modified.
func (in *pqInterner) ptrMap(enc []byte, n int) map[string]*string {
	if m, ok := in.maps[string(enc)]; ok {
		return m
	}
	m := make(map[string]*string, n)
	for rest := enc; len(rest) > 0; {
		var k, v []byte
		var null bool
		k, v, null, rest = nextMapEntry(rest)
		var p *string
		if !null {
			p = in.ptr(v)
		}
		m[in.str(k)] = p
	}
	if len(enc) <= 4*internMaxLen && len(in.maps) < internMaxEntries {
		in.maps[string(enc)] = m
	}
	return m
}
