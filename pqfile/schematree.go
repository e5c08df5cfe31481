package pqfile

import (
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go/format"
)

// MaxSchemaDepth bounds the nesting of a footer's schema (the root is at
// depth 0): a hostile footer can neither recurse without end nor make
// path building quadratic. Spark's deepest schemas nest a few levels per
// struct, list or map.
const MaxSchemaDepth = 64

// SchemaTree is the shape of a footer's schema, which the footer stores
// flattened depth first, each group giving its number of children. It is
// the one schema tree of the module: the rewrite renames through it and
// writeback checks appended files against the table's schema with it.
type SchemaTree struct {
	// Nodes are the schema's elements in footer order; Nodes[0] is the
	// root.
	Nodes []SchemaNode
	// Leaves are the element indexes of the leaves, in column order.
	Leaves []int
}

// SchemaNode is one element of a schema.
type SchemaNode struct {
	Element  *format.SchemaElement
	Parent   int // element index of the parent; -1 for the root
	Children []*SchemaNode
	// Leaf is the column index of a leaf (an element without children),
	// -1 for a group.
	Leaf int
	// MaxDef is the maximum definition level of values at this node: its
	// optional and repeated ancestors below the root, itself included.
	MaxDef int
}

// Name is the element's name.
func (n *SchemaNode) Name() string { return n.Element.Name }

// Optional reports whether the element is optional.
func (n *SchemaNode) Optional() bool {
	return n.Element.RepetitionType.Valid && n.Element.RepetitionType.V == format.Optional
}

// Repeated reports whether the element is repeated.
func (n *SchemaNode) Repeated() bool {
	return n.Element.RepetitionType.Valid && n.Element.RepetitionType.V == format.Repeated
}

// Child returns the child named name, or nil.
func (n *SchemaNode) Child(name string) *SchemaNode {
	for _, c := range n.Children {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// FirstLeaf returns the first leaf under n (n itself for a leaf).
func (n *SchemaNode) FirstLeaf() *SchemaNode {
	for len(n.Children) > 0 {
		n = n.Children[0]
	}
	return n
}

// Root returns the root element.
func (t *SchemaTree) Root() *SchemaNode { return &t.Nodes[0] }

// BuildSchemaTree checks the depth-first num_children encoding of schema
// and returns its tree. A malformed encoding (elements outside the root,
// a group lacking children, nesting deeper than MaxSchemaDepth) is an
// error wrapping ErrCorrupt. Elements are not otherwise checked: a leaf
// without a physical type is the caller's to refuse.
func BuildSchemaTree(schema []format.SchemaElement) (*SchemaTree, error) {
	if len(schema) == 0 {
		return nil, fmt.Errorf("%w: empty schema", ErrCorrupt)
	}
	t := &SchemaTree{Nodes: make([]SchemaNode, len(schema))}
	t.Nodes[0] = SchemaNode{Element: &schema[0], Parent: -1, Leaf: -1}
	type frame struct{ index, left int }
	stack := []frame{{0, numChildren(&schema[0])}}
	for i := 1; i < len(schema); i++ {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return nil, fmt.Errorf("%w: schema element %d (%q) is outside the root", ErrCorrupt, i, schema[i].Name)
		}
		if len(stack) > MaxSchemaDepth {
			return nil, fmt.Errorf("%w: schema nested deeper than %d levels at element %d (%q)", ErrCorrupt, MaxSchemaDepth, i, schema[i].Name)
		}
		top := &stack[len(stack)-1]
		top.left--
		parent := &t.Nodes[top.index]
		n := &t.Nodes[i]
		*n = SchemaNode{Element: &schema[i], Parent: top.index, Leaf: -1, MaxDef: parent.MaxDef}
		if n.Optional() || n.Repeated() {
			n.MaxDef++
		}
		parent.Children = append(parent.Children, n)
		if kids := numChildren(&schema[i]); kids > 0 {
			if kids > len(schema) {
				return nil, fmt.Errorf("%w: schema element %d (%q) claims %d children", ErrCorrupt, i, schema[i].Name, kids)
			}
			stack = append(stack, frame{i, kids})
		} else {
			n.Leaf = len(t.Leaves)
			t.Leaves = append(t.Leaves, i)
		}
	}
	for _, f := range stack {
		if f.left != 0 {
			return nil, fmt.Errorf("%w: schema element %d (%q) lacks %d children", ErrCorrupt, f.index, schema[f.index].Name, f.left)
		}
	}
	return t, nil
}

func numChildren(e *format.SchemaElement) int {
	if !e.NumChildren.Valid || e.NumChildren.V < 0 {
		return 0
	}
	return int(e.NumChildren.V)
}

// path returns the names from the root's child down to element i, using
// name(j) for element j.
func (t *SchemaTree) path(i int, name func(j int) string) []string {
	var p []string
	for ; i > 0; i = t.Nodes[i].Parent {
		p = append(p, name(i))
	}
	slices.Reverse(p)
	return p
}
