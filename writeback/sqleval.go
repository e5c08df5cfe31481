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

// Where Spark 3.5 (spark.sql.ansi.enabled=false, its default) and Spark 4
// (ANSI mode, its default) compute different outcomes, the row is refused
// with an error naming both rules, rather than one of them picked.
var (
	// errOverflow: integer arithmetic outside its type (Add/Subtract/
	// Multiply/UnaryMinus: legacy wraps around, ANSI raises ARITHMETIC_OVERFLOW).
	errOverflow = errors.New("integer arithmetic overflows its type: Spark 3.5 (spark.sql.ansi.enabled=false) wraps around, " +
		"Spark 4 (ANSI, its default) fails the write with ARITHMETIC_OVERFLOW; deltafs refuses the row rather than pick one")
	// errDivideByZero: / or % by zero (Divide, Remainder: legacy NULL, ANSI DIVIDE_BY_ZERO).
	errDivideByZero = errors.New("division by zero: Spark 3.5 (spark.sql.ansi.enabled=false) gives NULL, " +
		"Spark 4 (ANSI, its default) fails the write with DIVIDE_BY_ZERO; deltafs refuses the row rather than pick one")
	// errDecimalOverflow: a value that does not fit the decimal type a
	// comparison casts both sides to, capped at 38 digits
	// (DecimalPrecision.widerDecimalType, DecimalType.bounded; Cast: legacy
	// NULL, ANSI NUMERIC_VALUE_OUT_OF_RANGE).
	errDecimalOverflow = errors.New("a value does not fit the decimal type Spark computes or compares it at (its precision capped at 38 digits): " +
		"Spark 3.5 (spark.sql.ansi.enabled=false) casts it to NULL, Spark 4 (ANSI, its default) fails the write with NUMERIC_VALUE_OUT_OF_RANGE; " +
		"deltafs refuses the row rather than pick one")
)

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
	case *charLenExpr:
		return compileCharLen(e, resolve)
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
		return arithmetic(e.op, l, r, literalPrecision(e.l, lt, rt), literalPrecision(e.r, rt, lt))
	}
	cmp, err := comparer(literalPrecision(e.l, lt, rt), literalPrecision(e.r, rt, lt))
	if err != nil {
		return nil, sqlType{}, fmt.Errorf("%s %s %s: %w", lt, e.op, rt, err)
	}
	return compareFn(e.op, l, r, cmp), sqlType{kind: kindBool}, nil
}

// literalPrecision is the type an integer literal compared with a decimal
// is cast to: the decimal of its own digits, not of its type
// (DecimalPrecision.nondecimalAndDecimal with
// spark.sql.legacy.literal.pickMinimumPrecision, true by default:
// DecimalType.fromLiteral).
func literalPrecision(e sqlExpr, t, other sqlType) sqlType {
	lit, ok := e.(*litExpr)
	if !ok || t.kind != kindInt || other.kind != kindDecimal {
		return t
	}
	return sqlType{kind: kindDecimal, precision: max(len(new(big.Int).Abs(lit.v.r.Num()).String()), 1)}
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

func compareFn(op string, l, r evalFn, cmp cmpFn) evalFn {
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
			c, err := cmp(a, b)
			return boolValue(c == 0), err
		}
		if a.isNull() || b.isNull() {
			return nullValue, nil
		}
		c, err := cmp(a, b)
		if err != nil {
			return nullValue, err
		}
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

// cmpFn orders two non-null values of a comparison; an error is a value
// that cannot be cast to the type they are compared at.
type cmpFn func(x, y sqlValue) (int, error)

// comparer returns how two values of the types compare, as Spark does
// after its implicit casts to their common type (widerType): numbers by
// value (as float when either is a float, as double when a double or a
// decimal meets a float, NaN equal to itself and above every number;
// integers and decimals exactly, at a decimal type capped at 38 digits),
// strings by their UTF-8 bytes, booleans false before true.
func comparer(a, b sqlType) (cmpFn, error) {
	t, capped, err := widerType(a, b)
	if err != nil {
		return nil, err
	}
	return compareAt(t, capped), nil
}

// compareAt compares two values cast to type t; capped says t is a
// decimal whose precision was cut to 38, so that a value may not fit.
func compareAt(t sqlType, capped bool) cmpFn {
	switch t.kind {
	case kindFloat:
		return func(x, y sqlValue) (int, error) { return cmpSparkFloat(x.asFloat(t.bits), y.asFloat(t.bits)), nil }
	case kindInt, kindDecimal:
		return func(x, y sqlValue) (int, error) {
			if capped && (!fitsDecimal(x.r, t) || !fitsDecimal(y.r, t)) {
				return 0, errDecimalOverflow
			}
			return x.r.Cmp(y.r), nil
		}
	case kindString:
		return func(x, y sqlValue) (int, error) { return strings.Compare(x.s, y.s), nil }
	case kindBool:
		return func(x, y sqlValue) (int, error) { return btoi(x.b) - btoi(y.b), nil }
	}
	return func(sqlValue, sqlValue) (int, error) { return 0, nil } // NULL with NULL
}

// fitsDecimal reports whether exact value r has at most t.precision -
// t.scale integral digits (its scale is at most t.scale by construction).
func fitsDecimal(r *big.Rat, t sqlType) bool {
	lim := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.precision-t.scale)), nil))
	return new(big.Rat).Abs(r).Cmp(lim) < 0
}

// widerType is the type Spark casts two types to when they meet in a
// comparison or an IN list (TypeCoercion.findWiderTypeForTwo; the ANSI
// rules agree for these types): NULL takes the other type; integers the
// wider one; a float or double with an integer the float type
// (numericPrecedence), with a decimal a double; integers and decimals a
// decimal wide enough for both (DecimalPrecision.widerDecimalType, an
// integer as DecimalType.forType: tinyint decimal(3,0) ... bigint
// decimal(20,0)), bounded to 38 digits (DecimalType.bounded: capped).
// Strings meet strings and booleans booleans only: Spark 3.5 and 4 cast
// a string meeting a number differently, so that is outside the subset.
func widerType(a, b sqlType) (t sqlType, capped bool, err error) {
	switch {
	case a.kind == kindNull:
		return b, false, nil
	case b.kind == kindNull:
		return a, false, nil
	case a.kind == kindInt && b.kind == kindInt:
		return sqlType{kind: kindInt, bits: max(a.bits, b.bits)}, false, nil
	case a.numeric() && b.numeric() && (a.kind == kindFloat || b.kind == kindFloat):
		if a.kind == kindDecimal || b.kind == kindDecimal || max(a.bits*btoi(a.kind == kindFloat), b.bits*btoi(b.kind == kindFloat)) == 64 {
			return sqlType{kind: kindFloat, bits: 64}, false, nil
		}
		return sqlType{kind: kindFloat, bits: 32}, false, nil
	case a.numeric() && b.numeric():
		a, b = asDecimal(a), asDecimal(b)
		if a == b {
			return a, false, nil
		}
		s := max(a.scale, b.scale)
		p := max(a.precision-a.scale, b.precision-b.scale) + s
		if p > maxDecimalPrecision {
			return sqlType{kind: kindDecimal, precision: maxDecimalPrecision, scale: min(s, maxDecimalPrecision)}, true, nil
		}
		return sqlType{kind: kindDecimal, precision: p, scale: s}, false, nil
	case a.kind == b.kind && (a.kind == kindString || a.kind == kindBool):
		return a, false, nil
	}
	return sqlType{}, false, fmt.Errorf("comparing a %s with a %s is outside the supported subset", a, b)
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
			return floatArith(op, a.asFloat(res.bits), b.asFloat(res.bits), res.bits)
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
	if p > maxDecimalPrecision && s > 6 {
		// DecimalPrecision.adjustPrecisionScale (allowPrecisionLoss) would
		// cut the scale and round the result.
		return sqlType{}, fmt.Errorf("decimal %s of %s and %s needs more than 38 digits (Spark would round)", op, a, b)
	}
	// Over 38 digits with a scale of at most 6, Spark keeps the scale and
	// caps the precision: decimal(38,s), which a result may overflow
	// (exactArith checks it).
	return sqlType{kind: kindDecimal, precision: min(p, maxDecimalPrecision), scale: s}, nil
}

func asDecimal(t sqlType) sqlType {
	if t.kind == kindInt {
		return sqlType{kind: kindDecimal, precision: map[int]int{8: 3, 16: 5, 32: 10, 64: 20}[t.bits]}
	}
	return t
}

func floatArith(op string, a, b float64, bits int) (sqlValue, error) {
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
			return nullValue, errDivideByZero
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
	return floatValue(f), nil
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
			return nullValue, errDivideByZero
		}
		q := new(big.Rat).Quo(a, b)
		t := new(big.Int).Quo(q.Num(), q.Denom()) // truncated toward zero
		out.Sub(a, new(big.Rat).Mul(b, new(big.Rat).SetInt(t)))
	}
	if res.kind == kindInt && !fitsBits(out, res.bits) {
		return nullValue, errOverflow
	}
	if res.kind == kindDecimal && res.precision == maxDecimalPrecision && !fitsDecimal(out, res) {
		return nullValue, errDecimalOverflow
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

// compileIn compiles x IN (items) as Spark's InConversion does: x and
// every item cast to their common type (findWiderCommonType, folding
// widerType over x and all the items, not item by item), then compared
// there.
func compileIn(e *inExpr, resolve columnResolver) (evalFn, sqlType, error) {
	x, xt, err := compileSQL(e.x, resolve)
	if err != nil {
		return nil, xt, err
	}
	common, capped := xt, false
	items := make([]evalFn, len(e.list))
	for i, it := range e.list {
		f, t, err := compileSQL(it, resolve)
		if err != nil {
			return nil, t, err
		}
		c, cp, err := widerType(common, t)
		if err != nil {
			return nil, t, fmt.Errorf("IN: %w", err)
		}
		items[i], common, capped = f, c, capped || cp
	}
	cmp := compareAt(common, capped)
	not := e.not
	return func(row []sqlValue) (sqlValue, error) {
		v, err := x(row)
		if err != nil || v.isNull() {
			return nullValue, err
		}
		sawNull := false
		for _, it := range items {
			w, err := it(row)
			if err != nil {
				return w, err
			}
			if w.isNull() {
				sawNull = true
				continue
			}
			c, err := cmp(v, w)
			if err != nil {
				return nullValue, err
			}
			if c == 0 {
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
