package writeback

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The subset of Spark SQL that CHECK constraints and column invariants
// may use for deltafs to append to the table (docs/user-guide.md lists it):
//
//	expr      := and { OR and }
//	and       := not { AND not }
//	not       := NOT not | predicate
//	predicate := sum [ cmp sum | IS [NOT] NULL | [NOT] IN ( expr {, expr} )
//	                 | [NOT] BETWEEN sum AND sum | [NOT] LIKE string ]
//	cmp       := = | == | <> | != | < | <= | > | >= | <=>
//	sum       := product { (+|-) product }
//	product   := unary { (*|/|%) unary }
//	unary     := (-|+) unary | primary
//	primary   := number | string | TRUE | FALSE | NULL | column | ( expr )
//	column    := name { . name }    name: letters, digits, _ or `quoted`
//
// Keywords are case-insensitive. Numbers: 12 (int, or bigint/decimal when
// larger), 1.5 (decimal), 1e3 (double), with Spark's suffixes L, S, Y, D,
// F and BD. Strings: '...' or "..." with backslash escapes.

// sqlExpr is a node of a parsed expression.
type sqlExpr interface{ sql() string }

type (
	litExpr struct {
		v   sqlValue
		typ sqlType
	}
	colExpr    struct{ path []string }
	negExpr    struct{ x sqlExpr }
	notExpr    struct{ x sqlExpr }
	binaryExpr struct {
		op   string // + - * / % = <> < <= > >= <=> AND OR
		l, r sqlExpr
	}
	isNullExpr struct {
		x   sqlExpr
		not bool
	}
	inExpr struct {
		x    sqlExpr
		list []sqlExpr
		not  bool
	}
	betweenExpr struct {
		x, lo, hi sqlExpr
		not       bool
	}
	likeExpr struct {
		x       sqlExpr
		pattern string
		not     bool
	}
)

// maxExprDepth bounds nesting, so that hostile text cannot exhaust the stack.
const maxExprDepth = 100

// parseSQL parses one boolean expression of the subset; the error says
// where it stops and what it expected.
func parseSQL(text string) (sqlExpr, error) {
	toks, err := lexSQL(text)
	if err != nil {
		return nil, err
	}
	p := &sqlParser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errAt(t, "unexpected %s", t.describe())
	}
	return e, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokStr
	tokIdent  // a bare name or keyword
	tokQuoted // a `quoted` name (never a keyword)
	tokOp
)

type sqlToken struct {
	kind tokKind
	text string // the name, the operator, the unescaped string or the number
	pos  int    // byte offset in the text
}

func (t sqlToken) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokStr:
		return "string " + strconv.Quote(t.text)
	}
	return strconv.Quote(t.text)
}

func (t sqlToken) is(keyword string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.text, keyword)
}

// lexSQL splits the text into tokens.
func lexSQL(s string) ([]sqlToken, error) {
	var out []sqlToken
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case r >= '0' && r <= '9' || r == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := lexNumber(s, i)
			out = append(out, sqlToken{tokNum, s[i:j], i})
			i = j
		case r == '\'' || r == '"':
			str, j, err := lexString(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, sqlToken{tokStr, str, i})
			i = j
		case r == '`':
			name, j, err := lexQuoted(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, sqlToken{tokQuoted, name, i})
			i = j
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if r2 != '_' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
					break
				}
				j += w2
			}
			out = append(out, sqlToken{tokIdent, s[i:j], i})
			i = j
		default:
			op := lexOp(s[i:])
			if op == "" {
				return nil, fmt.Errorf("at offset %d: unexpected character %q", i, r)
			}
			out = append(out, sqlToken{tokOp, op, i})
			i += len(op)
		}
	}
	return append(out, sqlToken{kind: tokEOF, pos: len(s)}), nil
}

func lexOp(s string) string {
	for _, op := range []string{"<=>", "==", "<>", "!=", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", "."} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return ""
}

// lexNumber returns the end of the number starting at i: digits, a
// fraction, an exponent and a suffix (letters, checked by the parser).
func lexNumber(s string, i int) int {
	digits := func(j int) int {
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j
	}
	j := digits(i)
	if j < len(s) && s[j] == '.' {
		j = digits(j + 1)
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if e := digits(k); e > k {
			j = e
		}
	}
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
		j++
	}
	return j
}

// lexString reads a quoted string with Spark's backslash escapes.
func lexString(s string, i int) (string, int, error) {
	q := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == q:
			return b.String(), j + 1, nil
		case c == '\\' && j+1 < len(s):
			j++
			switch e := s[j]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case '0':
				b.WriteByte(0)
			case 'Z':
				b.WriteByte(26)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("at offset %d: unterminated string", i)
}

// lexQuoted reads a `quoted` name; “ stands for one backquote.
func lexQuoted(s string, i int) (string, int, error) {
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		if s[j] != '`' {
			b.WriteByte(s[j])
			continue
		}
		if j+1 < len(s) && s[j+1] == '`' {
			b.WriteByte('`')
			j++
			continue
		}
		return b.String(), j + 1, nil
	}
	return "", 0, fmt.Errorf("at offset %d: unterminated `name`", i)
}

// sqlParser is a recursive-descent parser over the tokens; depth counts
// the nesting of the productions being parsed.
type sqlParser struct {
	toks  []sqlToken
	pos   int
	depth int
}

func (p *sqlParser) peek() sqlToken { return p.toks[p.pos] }

func (p *sqlParser) next() sqlToken {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

func (p *sqlParser) errAt(t sqlToken, format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", t.pos, fmt.Sprintf(format, args...))
}

func (p *sqlParser) acceptKeyword(k string) bool {
	if p.peek().is(k) {
		p.pos++
		return true
	}
	return false
}

func (p *sqlParser) acceptOp(op string) bool {
	if t := p.peek(); t.kind == tokOp && t.text == op {
		p.pos++
		return true
	}
	return false
}

func (p *sqlParser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.errAt(p.peek(), "expected %q, found %s", op, p.peek().describe())
	}
	return nil
}

func (p *sqlParser) enter() error {
	p.depth++
	if p.depth > maxExprDepth {
		return p.errAt(p.peek(), "expression nested deeper than %d", maxExprDepth)
	}
	return nil
}

func (p *sqlParser) or() (sqlExpr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	l, err := p.and()
	for err == nil && p.acceptKeyword("OR") {
		var r sqlExpr
		if r, err = p.and(); err == nil {
			l = &binaryExpr{op: "OR", l: l, r: r}
		}
	}
	return l, err
}

func (p *sqlParser) and() (sqlExpr, error) {
	l, err := p.not()
	for err == nil && p.acceptKeyword("AND") {
		var r sqlExpr
		if r, err = p.not(); err == nil {
			l = &binaryExpr{op: "AND", l: l, r: r}
		}
	}
	return l, err
}

func (p *sqlParser) not() (sqlExpr, error) {
	if p.acceptKeyword("NOT") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &notExpr{x}, nil
	}
	return p.predicate()
}

var comparisons = map[string]string{"=": "=", "==": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}

func (p *sqlParser) predicate() (sqlExpr, error) {
	x, err := p.sum()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tokOp && comparisons[t.text] != "" {
		p.next()
		r, err := p.sum()
		if err != nil {
			return nil, err
		}
		return &binaryExpr{op: comparisons[t.text], l: x, r: r}, nil
	}
	if p.acceptKeyword("IS") {
		not := p.acceptKeyword("NOT")
		if !p.acceptKeyword("NULL") {
			return nil, p.errAt(p.peek(), "expected NULL after IS, found %s", p.peek().describe())
		}
		return &isNullExpr{x: x, not: not}, nil
	}
	not := p.acceptKeyword("NOT")
	switch {
	case p.acceptKeyword("IN"):
		list, err := p.inList()
		return &inExpr{x: x, list: list, not: not}, err
	case p.acceptKeyword("BETWEEN"):
		lo, err := p.sum()
		if err != nil {
			return nil, err
		}
		if !p.acceptKeyword("AND") {
			return nil, p.errAt(p.peek(), "expected AND in BETWEEN, found %s", p.peek().describe())
		}
		hi, err := p.sum()
		return &betweenExpr{x: x, lo: lo, hi: hi, not: not}, err
	case p.acceptKeyword("LIKE"):
		t := p.next()
		if t.kind != tokStr {
			return nil, p.errAt(t, "LIKE takes a string literal pattern, found %s", t.describe())
		}
		return &likeExpr{x: x, pattern: t.text, not: not}, nil
	case not:
		return nil, p.errAt(p.peek(), "expected IN, BETWEEN or LIKE after NOT, found %s", p.peek().describe())
	}
	return x, nil
}

func (p *sqlParser) inList() ([]sqlExpr, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var list []sqlExpr
	for {
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		list = append(list, e)
		if !p.acceptOp(",") {
			return list, p.expectOp(")")
		}
	}
}

func (p *sqlParser) sum() (sqlExpr, error) {
	l, err := p.product()
	for err == nil {
		t := p.peek()
		if t.kind != tokOp || (t.text != "+" && t.text != "-") {
			break
		}
		p.next()
		var r sqlExpr
		if r, err = p.product(); err == nil {
			l = &binaryExpr{op: t.text, l: l, r: r}
		}
	}
	return l, err
}

func (p *sqlParser) product() (sqlExpr, error) {
	l, err := p.unary()
	for err == nil {
		t := p.peek()
		if t.kind != tokOp || (t.text != "*" && t.text != "/" && t.text != "%") {
			break
		}
		p.next()
		var r sqlExpr
		if r, err = p.unary(); err == nil {
			l = &binaryExpr{op: t.text, l: l, r: r}
		}
	}
	return l, err
}

func (p *sqlParser) unary() (sqlExpr, error) {
	if t := p.peek(); t.kind == tokOp && (t.text == "-" || t.text == "+") {
		p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.unary()
		if err != nil || t.text == "+" {
			return x, err
		}
		return &negExpr{x}, nil
	}
	return p.primary()
}

func (p *sqlParser) primary() (sqlExpr, error) {
	t := p.next()
	switch {
	case t.kind == tokNum:
		return parseNumber(t)
	case t.kind == tokStr:
		return &litExpr{v: strValue(t.text), typ: sqlType{kind: kindString}}, nil
	case t.is("TRUE") || t.is("FALSE"):
		return &litExpr{v: boolValue(t.is("TRUE")), typ: sqlType{kind: kindBool}}, nil
	case t.is("NULL"):
		return &litExpr{v: nullValue, typ: sqlType{kind: kindNull}}, nil
	case t.kind == tokOp && t.text == "(":
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		return e, p.expectOp(")")
	case t.kind == tokQuoted || t.kind == tokIdent && !reserved(t.text):
		path := []string{t.text}
		for p.acceptOp(".") {
			n := p.next()
			if n.kind != tokIdent && n.kind != tokQuoted {
				return nil, p.errAt(n, "expected a field name after '.', found %s", n.describe())
			}
			path = append(path, n.text)
		}
		if p.peek().kind == tokOp && p.peek().text == "(" {
			return nil, p.errAt(t, "function %s is outside the supported subset", t.text)
		}
		return &colExpr{path: path}, nil
	}
	return nil, p.errAt(t, "unexpected %s", t.describe())
}

// reserved are the keywords that cannot name a column unquoted here.
func reserved(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE", "TRUE", "FALSE",
		"CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "INTERVAL", "DATE", "TIMESTAMP", "RLIKE", "ILIKE", "ESCAPE":
		return true
	}
	return false
}

// parseNumber reads a numeric literal with Spark's types: an integer is
// int, else bigint, else decimal; with a fraction decimal; with an
// exponent double; suffixes L (bigint), S (smallint), Y (tinyint),
// D (double), F (float), BD (decimal).
func parseNumber(t sqlToken) (sqlExpr, error) {
	s := t.text
	end := len(s)
	for end > 0 && (s[end-1] >= 'a' && s[end-1] <= 'z' || s[end-1] >= 'A' && s[end-1] <= 'Z') {
		end--
	}
	body, suffix := s[:end], strings.ToUpper(s[end:])
	if strings.ContainsAny(body, "eE") && suffix == "" {
		suffix = "D"
	}
	r, ok := new(big.Rat).SetString(body)
	if !ok || body == "" {
		return nil, fmt.Errorf("at offset %d: bad number %q", t.pos, s)
	}
	integral := !strings.ContainsAny(body, ".eE")
	lit := func(typ sqlType, v sqlValue) (sqlExpr, error) { return &litExpr{v: v, typ: typ}, nil }
	switch suffix {
	case "":
		if integral {
			return lit(intLiteralType(r), exactValue(r))
		}
		return lit(decimalTypeOf(body), exactValue(r))
	case "L", "S", "Y":
		bits := map[string]int{"L": 64, "S": 16, "Y": 8}[suffix]
		if !integral || !fitsBits(r, bits) {
			return nil, fmt.Errorf("at offset %d: %s does not fit its type", t.pos, s)
		}
		return lit(sqlType{kind: kindInt, bits: bits}, exactValue(r))
	case "D", "F":
		f, err := strconv.ParseFloat(body, 64)
		if err != nil || suffix == "F" && math.IsInf(float64(float32(f)), 0) {
			return nil, fmt.Errorf("at offset %d: %s is out of range", t.pos, s)
		}
		if suffix == "F" {
			return lit(sqlType{kind: kindFloat, bits: 32}, floatValue(float64(float32(f))))
		}
		return lit(sqlType{kind: kindFloat, bits: 64}, floatValue(f))
	case "BD":
		return lit(decimalTypeOf(body), exactValue(r))
	}
	return nil, fmt.Errorf("at offset %d: bad number suffix in %q", t.pos, s)
}

func intLiteralType(r *big.Rat) sqlType {
	switch {
	case fitsBits(r, 32):
		return sqlType{kind: kindInt, bits: 32}
	case fitsBits(r, 64):
		return sqlType{kind: kindInt, bits: 64}
	}
	return sqlType{kind: kindDecimal, precision: len(r.Num().String()), scale: 0}
}

// decimalTypeOf gives a decimal literal its precision and scale.
func decimalTypeOf(body string) sqlType {
	intPart, frac, _ := strings.Cut(body, ".")
	digits := strings.TrimLeft(intPart, "0") + frac
	p := max(len(digits), len(frac), 1)
	return sqlType{kind: kindDecimal, precision: p, scale: len(frac)}
}

// The sql methods print an expression fully parenthesized, so that the
// text parses back to the same tree (the fuzz target checks it).

func (e *litExpr) sql() string {
	switch e.v.kind {
	case kindNull:
		return "NULL"
	case kindBool:
		return strings.ToUpper(strconv.FormatBool(e.v.b))
	case kindString:
		return quoteSQLString(e.v.s)
	case kindFloat:
		s := strconv.FormatFloat(e.v.f, 'e', -1, 64)
		if e.typ.bits == 32 {
			return s + "F"
		}
		return s + "D"
	}
	s := e.v.String()
	switch {
	case e.typ.kind == kindDecimal && !strings.Contains(s, "."):
		return s + "BD"
	case e.typ.kind == kindInt && e.typ.bits != 32 && e.typ.bits != 64:
		return s + map[int]string{8: "Y", 16: "S"}[e.typ.bits]
	case e.typ.kind == kindInt && e.typ.bits == 64 && fitsBits(e.v.r, 32):
		return s + "L"
	}
	return s
}

func quoteSQLString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '\\':
			if c == '\\' && i+1 < len(s) && (s[i+1] == '%' || s[i+1] == '_') {
				b.WriteByte(c) // "\%" stays two characters when read back
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\b':
			b.WriteString(`\b`)
		case 0:
			b.WriteString(`\0`)
		case 26:
			b.WriteString(`\Z`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func (e *colExpr) sql() string {
	parts := make([]string, len(e.path))
	for i, p := range e.path {
		parts[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
	}
	return strings.Join(parts, ".")
}

func (e *negExpr) sql() string    { return "(-" + e.x.sql() + ")" }
func (e *notExpr) sql() string    { return "(NOT " + e.x.sql() + ")" }
func (e *binaryExpr) sql() string { return "(" + e.l.sql() + " " + e.op + " " + e.r.sql() + ")" }

func notWord(not bool) string {
	if not {
		return "NOT "
	}
	return ""
}

func (e *isNullExpr) sql() string { return "(" + e.x.sql() + " IS " + notWord(e.not) + "NULL)" }

func (e *inExpr) sql() string {
	items := make([]string, len(e.list))
	for i, it := range e.list {
		items[i] = it.sql()
	}
	return "(" + e.x.sql() + " " + notWord(e.not) + "IN (" + strings.Join(items, ", ") + "))"
}

func (e *betweenExpr) sql() string {
	return "(" + e.x.sql() + " " + notWord(e.not) + "BETWEEN " + e.lo.sql() + " AND " + e.hi.sql() + ")"
}

func (e *likeExpr) sql() string {
	return "(" + e.x.sql() + " " + notWord(e.not) + "LIKE " + quoteSQLString(e.pattern) + ")"
}
