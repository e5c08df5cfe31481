package writeback

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// sqlKind is the type class of an expression.
type sqlKind int

const (
	kindNull sqlKind = iota // the NULL literal: fits any type
	kindBool
	kindString
	kindInt     // bits 8, 16, 32 or 64
	kindDecimal // precision, scale
	kindFloat   // bits 32 (float) or 64 (double)
)

// sqlType is an expression's static type, Spark's for the same expression.
type sqlType struct {
	kind             sqlKind
	bits             int
	precision, scale int
}

func (t sqlType) numeric() bool {
	return t.kind == kindInt || t.kind == kindDecimal || t.kind == kindFloat
}

func (t sqlType) String() string {
	switch t.kind {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindString:
		return "string"
	case kindInt:
		return map[int]string{8: "tinyint", 16: "smallint", 32: "int", 64: "bigint"}[t.bits]
	case kindDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.precision, t.scale)
	}
	if t.bits == 32 {
		return "float"
	}
	return "double"
}

// sqlValue is one value during evaluation. Integers and decimals are
// exact (r); floats and doubles are f (a float holds a float32 value).
type sqlValue struct {
	kind sqlKind // kindNull, kindBool, kindString, kindDecimal (exact) or kindFloat
	b    bool
	s    string
	r    *big.Rat
	f    float64
}

var nullValue = sqlValue{kind: kindNull}

func boolValue(b bool) sqlValue      { return sqlValue{kind: kindBool, b: b} }
func strValue(s string) sqlValue     { return sqlValue{kind: kindString, s: s} }
func exactValue(r *big.Rat) sqlValue { return sqlValue{kind: kindDecimal, r: r} }
func floatValue(f float64) sqlValue  { return sqlValue{kind: kindFloat, f: f} }
func (v sqlValue) isNull() bool      { return v.kind == kindNull }
func intValue(n int64) sqlValue      { return exactValue(new(big.Rat).SetInt64(n)) }
func (v sqlValue) asFloat(bits int) float64 {
	f := v.f
	if v.kind == kindDecimal {
		f, _ = v.r.Float64()
	}
	if bits == 32 {
		return float64(float32(f))
	}
	return f
}

// String renders a value for messages, as Spark prints row values.
func (v sqlValue) String() string {
	switch v.kind {
	case kindNull:
		return "null"
	case kindBool:
		return strconv.FormatBool(v.b)
	case kindString:
		return v.s
	case kindFloat:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	}
	if v.r.IsInt() {
		return v.r.Num().String()
	}
	return v.r.FloatString(ratScale(v.r))
}

// ratScale is the number of decimal digits of an exact decimal value.
func ratScale(r *big.Rat) int {
	d := new(big.Int).Set(r.Denom())
	n := 0
	ten := big.NewInt(10)
	for d.Cmp(big.NewInt(1)) > 0 && n < 60 {
		d.Quo(d, ten)
		n++
	}
	return n
}

// errOverflow reports integer arithmetic outside its type: Spark wraps
// around there, so the appender refuses rather than guess.
var errOverflow = errors.New("integer arithmetic overflows its type (Spark would wrap around)")

// evalFn evaluates a compiled expression over one row of column values.
type evalFn func(row []sqlValue) (sqlValue, error)

// columnResolver finds a column's slot in the row and its type.
type columnResolver func(path []string) (slot int, typ sqlType, err error)

// compileSQL type-checks e and compiles it; columns are resolved by
// resolve. Errors name what is outside the subset.
func compileSQL(e sqlExpr, resolve columnResolver) (evalFn, sqlType, error) {
	switch e := e.(type) {
	case *litExpr:
		v := e.v
		return func([]sqlValue) (sqlValue, error) { return v, nil }, e.typ, nil
	case *colExpr:
		slot, typ, err := resolve(e.path)
		if err != nil {
			return nil, sqlType{}, err
		}
		return func(row []sqlValue) (sqlValue, error) { return row[slot], nil }, typ, nil
	case *negExpr:
		return compileNeg(e, resolve)
	case *notExpr:
		x, t, err := compileSQL(e.x, resolve)
		if err != nil {
			return nil, t, err
		}
		if t.kind != kindBool && t.kind != kindNull {
			return nil, t, fmt.Errorf("NOT of a %s", t)
		}
		return func(row []sqlValue) (sqlValue, error) {
			v, err := x(row)
			if err != nil || v.isNull() {
				return v, err
			}
			return boolValue(!v.b), nil
		}, sqlType{kind: kindBool}, nil
	case *binaryExpr:
		return compileBinary(e, resolve)
	case *isNullExpr:
		x, _, err := compileSQL(e.x, resolve)
		if err != nil {
			return nil, sqlType{}, err
		}
		not := e.not
		return func(row []sqlValue) (sqlValue, error) {
			v, err := x(row)
			return boolValue(v.isNull() != not), err
		}, sqlType{kind: kindBool}, nil
	case *inExpr:
		return compileIn(e, resolve)
	case *betweenExpr:
		lo := &binaryExpr{op: "AND", l: &binaryExpr{op: ">=", l: e.x, r: e.lo}, r: &binaryExpr{op: "<=", l: e.x, r: e.hi}}
		if e.not {
			return compileSQL(&notExpr{lo}, resolve)
		}
		return compileSQL(lo, resolve)
	case *likeExpr:
		return compileLike(e, resolve)
	}
	return nil, sqlType{}, fmt.Errorf("unknown expression %T", e)
}

func compileNeg(e *negExpr, resolve columnResolver) (evalFn, sqlType, error) {
	x, t, err := compileSQL(e.x, resolve)
	if err != nil {
		return nil, t, err
	}
	if !t.numeric() && t.kind != kindNull {
		return nil, t, fmt.Errorf("minus of a %s", t)
	}
	return func(row []sqlValue) (sqlValue, error) {
		v, err := x(row)
		switch {
		case err != nil || v.isNull():
			return v, err
		case v.kind == kindFloat:
			return floatValue(-v.f), nil
		}
		n := exactValue(new(big.Rat).Neg(v.r))
		if t.kind == kindInt && !fitsBits(n.r, t.bits) {
			return nullValue, errOverflow
		}
		return n, nil
	}, t, nil
}

func compileBinary(e *binaryExpr, resolve columnResolver) (evalFn, sqlType, error) {
	l, lt, err := compileSQL(e.l, resolve)
	if err != nil {
		return nil, lt, err
	}
	r, rt, err := compileSQL(e.r, resolve)
	if err != nil {
		return nil, rt, err
	}
	switch e.op {
	case "AND", "OR":
		for _, t := range []sqlType{lt, rt} {
			if t.kind != kindBool && t.kind != kindNull {
				return nil, t, fmt.Errorf("%s of a %s", e.op, t)
			}
		}
		return logicFn(e.op == "AND", l, r), sqlType{kind: kindBool}, nil
	case "+", "-", "*", "/", "%":
		return arithmetic(e.op, l, r, lt, rt)
	}
	cmp, err := comparer(lt, rt)
	if err != nil {
		return nil, sqlType{}, fmt.Errorf("%s %s %s: %w", lt, e.op, rt, err)
	}
	return compareFn(e.op, l, r, cmp), sqlType{kind: kindBool}, nil
}

// logicFn is SQL's three-valued AND (and) or OR.
func logicFn(and bool, l, r evalFn) evalFn {
	return func(row []sqlValue) (sqlValue, error) {
		a, err := l(row)
		if err != nil {
			return a, err
		}
		if !a.isNull() && a.b != and {
			return a, nil // false AND x, true OR x
		}
		b, err := r(row)
		switch {
		case err != nil:
			return b, err
		case !b.isNull() && b.b != and:
			return b, nil
		case a.isNull() || b.isNull():
			return nullValue, nil
		}
		return boolValue(and), nil
	}
}

func compareFn(op string, l, r evalFn, cmp func(a, b sqlValue) int) evalFn {
	return func(row []sqlValue) (sqlValue, error) {
		a, err := l(row)
		if err != nil {
			return a, err
		}
		b, err := r(row)
		if err != nil {
			return b, err
		}
		if op == "<=>" {
			if a.isNull() || b.isNull() {
				return boolValue(a.isNull() && b.isNull()), nil
			}
			return boolValue(cmp(a, b) == 0), nil
		}
		if a.isNull() || b.isNull() {
			return nullValue, nil
		}
		c := cmp(a, b)
		switch op {
		case "=":
			return boolValue(c == 0), nil
		case "<>":
			return boolValue(c != 0), nil
		case "<":
			return boolValue(c < 0), nil
		case "<=":
			return boolValue(c <= 0), nil
		case ">":
			return boolValue(c > 0), nil
		}
		return boolValue(c >= 0), nil
	}
}

// comparer returns how two values of the types compare, as Spark does
// after its implicit casts: numbers by value (as float when either is a
// float, as double when a double or a decimal meets a float, NaN equal to
// itself and above every number), strings by their UTF-8 bytes, booleans
// false before true.
func comparer(a, b sqlType) (func(x, y sqlValue) int, error) {
	switch {
	case a.kind == kindNull || b.kind == kindNull:
		if a.kind == kindNull && b.kind == kindNull {
			return func(sqlValue, sqlValue) int { return 0 }, nil
		}
		if a.kind == kindNull {
			return comparer(b, b)
		}
		return comparer(a, a)
	case a.numeric() && b.numeric():
		if a.kind != kindFloat && b.kind != kindFloat {
			return func(x, y sqlValue) int { return x.r.Cmp(y.r) }, nil
		}
		bits := 64
		if max(a.bits*btoi(a.kind == kindFloat), b.bits*btoi(b.kind == kindFloat)) == 32 && a.kind != kindDecimal && b.kind != kindDecimal {
			bits = 32
		}
		return func(x, y sqlValue) int { return cmpSparkFloat(x.asFloat(bits), y.asFloat(bits)) }, nil
	case a.kind == kindString && b.kind == kindString:
		return func(x, y sqlValue) int { return strings.Compare(x.s, y.s) }, nil
	case a.kind == kindBool && b.kind == kindBool:
		return func(x, y sqlValue) int { return btoi(x.b) - btoi(y.b) }, nil
	}
	return nil, fmt.Errorf("comparing a %s with a %s is outside the supported subset", a, b)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpSparkFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an || bn:
		return btoi(an) - btoi(bn)
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// arithmetic compiles + - * / % with Spark's result types: double for /
// of integers, the wider integer type (overflow refused), decimals whose
// result fits 38 digits exactly (Spark would round beyond), float or
// double when either side is one.
func arithmetic(op string, l, r evalFn, lt, rt sqlType) (evalFn, sqlType, error) {
	for _, t := range []sqlType{lt, rt} {
		if !t.numeric() && t.kind != kindNull {
			return nil, t, fmt.Errorf("arithmetic %s on a %s", op, t)
		}
	}
	res, err := arithmeticType(op, lt, rt)
	if err != nil {
		return nil, res, err
	}
	return func(row []sqlValue) (sqlValue, error) {
		a, err := l(row)
		if err != nil || a.isNull() {
			return nullValue, err
		}
		b, err := r(row)
		if err != nil || b.isNull() {
			return nullValue, err
		}
		if res.kind == kindFloat {
			return floatArith(op, a.asFloat(res.bits), b.asFloat(res.bits), res.bits), nil
		}
		return exactArith(op, a.r, b.r, res)
	}, res, nil
}

func arithmeticType(op string, a, b sqlType) (sqlType, error) {
	if a.kind == kindNull {
		a = b
	}
	if b.kind == kindNull {
		b = a
	}
	switch {
	case a.kind == kindNull:
		return sqlType{kind: kindInt, bits: 32}, nil
	case a.kind == kindFloat || b.kind == kindFloat:
		if a.kind == kindDecimal || b.kind == kindDecimal || max(a.bits*btoi(a.kind == kindFloat), b.bits*btoi(b.kind == kindFloat)) == 64 {
			return sqlType{kind: kindFloat, bits: 64}, nil
		}
		return sqlType{kind: kindFloat, bits: 32}, nil
	case op == "/" && a.kind == kindInt && b.kind == kindInt:
		return sqlType{kind: kindFloat, bits: 64}, nil
	case a.kind == kindInt && b.kind == kindInt:
		return sqlType{kind: kindInt, bits: max(a.bits, b.bits)}, nil
	case op == "/":
		return sqlType{}, fmt.Errorf("decimal division is outside the supported subset (Spark rounds its quotient)")
	}
	a, b = asDecimal(a), asDecimal(b)
	s := max(a.scale, b.scale)
	var p int
	switch op {
	case "+", "-":
		p = max(a.precision-a.scale, b.precision-b.scale) + s + 1
	case "*":
		p, s = a.precision+b.precision+1, a.scale+b.scale
	case "%":
		p = min(a.precision-a.scale, b.precision-b.scale) + s
	}
	if p > 38 {
		return sqlType{}, fmt.Errorf("decimal %s of %s and %s needs more than 38 digits (Spark would round)", op, a, b)
	}
	return sqlType{kind: kindDecimal, precision: p, scale: s}, nil
}

func asDecimal(t sqlType) sqlType {
	if t.kind == kindInt {
		return sqlType{kind: kindDecimal, precision: map[int]int{8: 3, 16: 5, 32: 10, 64: 20}[t.bits]}
	}
	return t
}

func floatArith(op string, a, b float64, bits int) sqlValue {
	var f float64
	switch op {
	case "+":
		f = a + b
	case "-":
		f = a - b
	case "*":
		f = a * b
	case "/", "%":
		if b == 0 {
			return nullValue // Spark: division by zero is null
		}
		if op == "/" {
			f = a / b
		} else {
			f = math.Mod(a, b)
		}
	}
	if bits == 32 {
		f = float64(float32(f))
	}
	return floatValue(f)
}

func exactArith(op string, a, b *big.Rat, res sqlType) (sqlValue, error) {
	out := new(big.Rat)
	switch op {
	case "+":
		out.Add(a, b)
	case "-":
		out.Sub(a, b)
	case "*":
		out.Mul(a, b)
	case "%":
		if b.Sign() == 0 {
			return nullValue, nil
		}
		q := new(big.Rat).Quo(a, b)
		t := new(big.Int).Quo(q.Num(), q.Denom()) // truncated toward zero
		out.Sub(a, new(big.Rat).Mul(b, new(big.Rat).SetInt(t)))
	}
	if res.kind == kindInt && !fitsBits(out, res.bits) {
		return nullValue, errOverflow
	}
	return exactValue(out), nil
}

// fitsBits reports whether r is an integer of the signed width.
func fitsBits(r *big.Rat, bits int) bool {
	if !r.IsInt() {
		return false
	}
	lim := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
	n := r.Num()
	return n.Cmp(lim) < 0 && n.Cmp(new(big.Int).Neg(lim)) >= 0
}

func compileIn(e *inExpr, resolve columnResolver) (evalFn, sqlType, error) {
	x, xt, err := compileSQL(e.x, resolve)
	if err != nil {
		return nil, xt, err
	}
	var items []evalFn
	var cmps []func(a, b sqlValue) int
	for _, it := range e.list {
		f, t, err := compileSQL(it, resolve)
		if err != nil {
			return nil, t, err
		}
		cmp, err := comparer(xt, t)
		if err != nil {
			return nil, t, fmt.Errorf("IN: %w", err)
		}
		items, cmps = append(items, f), append(cmps, cmp)
	}
	not := e.not
	return func(row []sqlValue) (sqlValue, error) {
		v, err := x(row)
		if err != nil || v.isNull() {
			return nullValue, err
		}
		sawNull := false
		for i, it := range items {
			w, err := it(row)
			if err != nil {
				return w, err
			}
			if w.isNull() {
				sawNull = true
			} else if cmps[i](v, w) == 0 {
				return boolValue(!not), nil
			}
		}
		if sawNull {
			return nullValue, nil
		}
		return boolValue(not), nil
	}, sqlType{kind: kindBool}, nil
}

func compileLike(e *likeExpr, resolve columnResolver) (evalFn, sqlType, error) {
	x, t, err := compileSQL(e.x, resolve)
	if err != nil {
		return nil, t, err
	}
	if t.kind != kindString && t.kind != kindNull {
		return nil, t, fmt.Errorf("LIKE on a %s", t)
	}
	pat, err := likePattern(e.pattern)
	if err != nil {
		return nil, t, err
	}
	not := e.not
	return func(row []sqlValue) (sqlValue, error) {
		v, err := x(row)
		if err != nil || v.isNull() {
			return nullValue, err
		}
		return boolValue(pat.match([]rune(v.s)) != not), nil
	}, sqlType{kind: kindBool}, nil
}

// likeToken is one element of a LIKE pattern: a literal rune, any one
// character (_) or any sequence (%).
type likeToken struct {
	r        rune
	one, any bool
}

type likePat []likeToken

// likePattern parses Spark's LIKE pattern with the default escape '\'.
func likePattern(s string) (likePat, error) {
	var p likePat
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\\':
			if i+1 == len(rs) || (rs[i+1] != '_' && rs[i+1] != '%' && rs[i+1] != '\\') {
				return nil, fmt.Errorf("LIKE pattern %q: the escape character must precede _, %% or \\", s)
			}
			i++
			p = append(p, likeToken{r: rs[i]})
		case '_':
			p = append(p, likeToken{one: true})
		case '%':
			p = append(p, likeToken{any: true})
		default:
			p = append(p, likeToken{r: rs[i]})
		}
	}
	return p, nil
}

// match runs the pattern over the runes with one row of dynamic
// programming per pattern token (linear memory, no backtracking).
func (p likePat) match(s []rune) bool {
	cur := make([]bool, len(s)+1) // cur[j]: the tokens so far match s[:j]
	cur[0] = true
	next := make([]bool, len(s)+1)
	for _, tk := range p {
		clear(next)
		for j := 0; j <= len(s); j++ {
			switch {
			case tk.any:
				next[j] = cur[j] || (j > 0 && next[j-1])
			case j > 0 && cur[j-1] && (tk.one || s[j-1] == tk.r):
				next[j] = true
			}
		}
		cur, next = next, cur
	}
	return cur[len(s)]
}
