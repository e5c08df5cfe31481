package writeback

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
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

// lexSQL splits the text into tokens as Spark's SqlBaseLexer.g4 does for
// the tokens of the subset: its WS characters and its SIMPLE_COMMENT
// ("--" to the end of the line, a backslash-newline continuing it) and
// BRACKETED_COMMENT ("/* */", nested; unclosed is an error; "/*+" starts
// a hint, which no expression may hold) are skipped.
func lexSQL(s string) ([]sqlToken, error) {
	var out []sqlToken
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			return nil, fmt.Errorf("at offset %d: the text is not valid UTF-8", i)
		case sparkSpace(r):
			i += w
		case strings.HasPrefix(s[i:], "--"):
			i = skipLineComment(s, i)
		case strings.HasPrefix(s[i:], "/*"):
			j, err := skipBracketedComment(s, i)
			if err != nil {
				return nil, err
			}
			i = j
		case r >= '0' && r <= '9' || r == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := lexNumber(s, i)
			out = append(out, sqlToken{tokNum, s[i:j], i})
			i = j
		case (r == 'r' || r == 'R') && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"'):
			str, j, err := lexRawString(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, sqlToken{tokStr, str, i})
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
				if r2 != '_' && !unicode.IsLetter(r2) && (r2 < '0' || r2 > '9') {
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

// sparkSpace reports whether r is in the WS rule of SqlBaseLexer.g4
// (narrower than unicode.IsSpace: U+0085 and U+2029 are not spaces there).
func sparkSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\f', '\r', '\v', 0xA0, 0x1680, 0x2028, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// skipLineComment returns the end of the SIMPLE_COMMENT at i:
// '--' ('\\\n' | ~[\r\n])* '\r'? '\n'?.
func skipLineComment(s string, i int) int {
	j := i + 2
	for j < len(s) {
		switch {
		case strings.HasPrefix(s[j:], "\\\n"):
			j += 2
			continue
		case s[j] == '\r' || s[j] == '\n':
		default:
			j++
			continue
		}
		break
	}
	if j < len(s) && s[j] == '\r' {
		j++
	}
	if j < len(s) && s[j] == '\n' {
		j++
	}
	return j
}

// skipBracketedComment returns the end of the BRACKETED_COMMENT at i,
// nested comments included (a nested "/*+" is text, as in Spark's rule).
func skipBracketedComment(s string, i int) (int, error) {
	if strings.HasPrefix(s[i:], "/*+") {
		return 0, fmt.Errorf("at offset %d: a hint (/*+ ... */) is not an expression", i)
	}
	depth := 0
	for j := i; j < len(s); {
		switch {
		case strings.HasPrefix(s[j:], "/*") && !strings.HasPrefix(s[j:], "/*+"):
			depth++
			j += 2
		case strings.HasPrefix(s[j:], "*/"):
			depth--
			j += 2
			if depth == 0 {
				return j, nil
			}
		default:
			j++
		}
	}
	return 0, fmt.Errorf("at offset %d: unclosed /* comment", i)
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
// fraction, an exponent and a suffix (letters, digits and underscores
// that follow, checked by the parser: Spark's isValidDecimal refuses a
// number run into a name).
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
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] == '_') {
		j++
	}
	return j
}

// lexString reads a quoted string (STRING_LITERAL or DOUBLEQUOTED_STRING)
// and unescapes it as SparkParserUtils.unescapeSQLString does: \\uXXXX,
// \\UXXXXXXXX, octal \\[01][0-7][0-7], then \\0 \\b \\n \\r \\t \\Z, \\% and \\_
// kept as two characters (for LIKE), any other escaped character itself.
// Spark builds UTF-16 text: a surrogate pair written as two \\u escapes is
// one character, a lone surrogate or a code point above U+10FFFF has no
// UTF-8 form and is refused.
func lexString(s string, i int) (string, int, error) {
	q := s[i]
	var b strings.Builder
	var high rune // a pending high surrogate from a \\u escape
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		if c == '\\' && j+1 < len(s) {
			if cp, n, ok := unicodeEscape(s[j:]); ok {
				if err := appendUTF16(&b, &high, cp); err != nil {
					return "", 0, fmt.Errorf("at offset %d: %v", j, err)
				}
				j += n - 1
				continue
			}
		}
		if high != 0 {
			return "", 0, fmt.Errorf("at offset %d: a lone surrogate escape has no UTF-8 form", j)
		}
		switch {
		case c == q:
			return b.String(), j + 1, nil
		case c == '\\' && j+1 < len(s):
			j++
			if n, ok := octalEscape(s[j:]); ok {
				b.WriteByte(n)
				j += 2
				continue
			}
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
				_, w := utf8.DecodeRuneInString(s[j:])
				b.WriteString(s[j : j+w])
				j += w - 1
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("at offset %d: unterminated string", i)
}

// unicodeEscape reads \\u + 4 or \\U + 8 hex digits at the start of s.
func unicodeEscape(s string) (cp int64, n int, ok bool) {
	switch {
	case len(s) >= 6 && s[1] == 'u' && isHex(s[2:6]):
		cp, _ = strconv.ParseInt(s[2:6], 16, 64)
		return cp, 6, true
	case len(s) >= 10 && s[1] == 'U' && isHex(s[2:10]):
		cp, _ = strconv.ParseInt(s[2:10], 16, 64)
		return cp, 10, true
	}
	return 0, 0, false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(s[i])) {
			return false
		}
	}
	return true
}

// octalEscape reads [01][0-7][0-7] at the start of s (after the backslash).
func octalEscape(s string) (byte, bool) {
	if len(s) < 3 || (s[0] != '0' && s[0] != '1') || s[1] < '0' || s[1] > '7' || s[2] < '0' || s[2] > '7' {
		return 0, false
	}
	return (s[0]-'0')<<6 | (s[1]-'0')<<3 | (s[2] - '0'), true
}

// appendUTF16 appends code point cp as Spark's UTF-16 text would hold it,
// pairing surrogates.
func appendUTF16(b *strings.Builder, high *rune, cp int64) error {
	switch {
	case cp > unicode.MaxRune:
		return fmt.Errorf("code point U+%X is above U+10FFFF", cp)
	case cp >= 0xDC00 && cp <= 0xDFFF && *high != 0:
		b.WriteRune(utf16.DecodeRune(*high, rune(cp)))
		*high = 0
		return nil
	case *high != 0:
		return fmt.Errorf("a lone surrogate escape has no UTF-8 form")
	case cp >= 0xD800 && cp <= 0xDBFF:
		*high = rune(cp)
		return nil
	case cp >= 0xDC00 && cp <= 0xDFFF:
		return fmt.Errorf("a lone surrogate escape has no UTF-8 form")
	}
	b.WriteRune(rune(cp))
	return nil
}

// lexRawString reads R'...' or R"..." (no escapes), as STRING_LITERAL does.
func lexRawString(s string, i int) (string, int, error) {
	q := s[i+1]
	end := strings.IndexByte(s[i+2:], q)
	if end < 0 {
		return "", 0, fmt.Errorf("at offset %d: unterminated string", i)
	}
	return s[i+2 : i+2+end], i + 3 + end, nil
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
	if t := p.peek(); t.kind == tokOp && t.text == "-" && p.toks[p.pos+1].kind == tokNum {
		// SqlBaseParser.g4 `number: MINUS? INTEGER_VALUE | MINUS? TINYINT_LITERAL | ...`:
		// the sign is part of the literal, so -128Y is a tinyint, -2147483648 an int and
		// -9223372036854775808L a bigint (ANTLR takes the constant alternative first).
		p.next()
		n := p.next()
		n.text, n.pos = "-"+n.text, t.pos
		return parseNumber(n)
	}
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

// parseNumber reads a numeric literal (with its sign, when the parser saw
// one) as AstBuilder types it (SqlBaseLexer.g4 for the forms):
//
//	12, -2147483648       int if it fits, else bigint, else decimal(p,0) (visitIntegerLiteral)
//	12L, 12S, 12Y         bigint, smallint, tinyint, range-checked with the sign; digits only
//	1.5, .5, 1.           decimal of Java BigDecimal's precision and scale (visitDecimalLiteral)
//	1e3, 1.5E-2           double (visitExponentLiteral: not legacy_exponent_literal_as_decimal)
//	1.5D, 1.5F            double, float, range-checked (visitDoubleLiteral, visitFloatLiteral)
//	1.5BD, 1.5E2BD        decimal of BigDecimal(raw) after Decimal.set: a negative scale
//	                      becomes scale 0 (1.5E2BD is decimal(3,0), 150)
//
// A decimal of more than 38 digits is refused, as DecimalType refuses it.
func parseNumber(t sqlToken) (sqlExpr, error) {
	s := t.text
	end := len(s)
	for end > 0 && (s[end-1] >= 'a' && s[end-1] <= 'z' || s[end-1] >= 'A' && s[end-1] <= 'Z') {
		end--
	}
	body, suffix := s[:end], strings.ToUpper(s[end:])
	digits := strings.TrimPrefix(body, "-")
	if digits == "" || strings.Contains(digits, "_") {
		return nil, fmt.Errorf("at offset %d: bad number %q", t.pos, s)
	}
	exp := strings.ContainsAny(body, "eE")
	integral := !strings.ContainsAny(body, ".eE")
	r, ok := new(big.Rat).SetString(body)
	if !ok {
		return nil, fmt.Errorf("at offset %d: bad number %q", t.pos, s)
	}
	lit := func(typ sqlType, v sqlValue) (sqlExpr, error) { return &litExpr{v: v, typ: typ}, nil }
	switch {
	case suffix == "" && integral:
		typ, err := intLiteralType(r)
		if err != nil {
			return nil, fmt.Errorf("at offset %d: %s: %v", t.pos, s, err)
		}
		return lit(typ, exactValue(r))
	case suffix == "" && exp, suffix == "D", suffix == "F":
		f, err := strconv.ParseFloat(body, 64)
		if err != nil || suffix == "F" && math.IsInf(float64(float32(f)), 0) {
			return nil, fmt.Errorf("at offset %d: %s is out of range", t.pos, s)
		}
		if suffix == "F" {
			return lit(sqlType{kind: kindFloat, bits: 32}, floatValue(float64(float32(f))))
		}
		return lit(sqlType{kind: kindFloat, bits: 64}, floatValue(f))
	case suffix == "" || suffix == "BD":
		typ, err := decimalLiteralType(body)
		if err != nil {
			return nil, fmt.Errorf("at offset %d: %s: %v", t.pos, s, err)
		}
		return lit(typ, exactValue(r))
	case suffix == "L" || suffix == "S" || suffix == "Y":
		bits := map[string]int{"L": 64, "S": 16, "Y": 8}[suffix]
		if !integral || !fitsBits(r, bits) {
			return nil, fmt.Errorf("at offset %d: %s does not fit its type", t.pos, s)
		}
		return lit(sqlType{kind: kindInt, bits: bits}, exactValue(r))
	}
	return nil, fmt.Errorf("at offset %d: bad number suffix in %q", t.pos, s)
}

// maxDecimalPrecision is DecimalType.MAX_PRECISION.
const maxDecimalPrecision = 38

func intLiteralType(r *big.Rat) (sqlType, error) {
	switch {
	case fitsBits(r, 32):
		return sqlType{kind: kindInt, bits: 32}, nil
	case fitsBits(r, 64):
		return sqlType{kind: kindInt, bits: 64}, nil
	}
	p := len(new(big.Int).Abs(r.Num()).String())
	if p > maxDecimalPrecision {
		return sqlType{}, fmt.Errorf("%d digits is more than a decimal holds (%d)", p, maxDecimalPrecision)
	}
	return sqlType{kind: kindDecimal, precision: p, scale: 0}, nil
}

// decimalLiteralType gives a decimal literal the precision and scale of
// Java's BigDecimal(body) as Spark's Decimal.set adjusts them: precision
// below scale (0.01: 1, 2) becomes the scale; a negative scale (1.5E2:
// 15 scaled -1) becomes 0 with the digits it stood for.
func decimalLiteralType(body string) (sqlType, error) {
	mant, expText, _ := strings.Cut(strings.ToUpper(strings.TrimPrefix(body, "-")), "E")
	intPart, frac, _ := strings.Cut(mant, ".")
	scale := len(frac)
	if expText != "" {
		e, err := strconv.Atoi(expText)
		if err != nil || e > 1000 || e < -1000 {
			return sqlType{}, fmt.Errorf("exponent out of range")
		}
		scale -= e
	}
	unscaled := strings.TrimLeft(intPart+frac, "0")
	p := max(len(unscaled), 1)
	switch {
	case scale < 0:
		p, scale = p-scale, 0
	case p < scale:
		p = scale
	}
	if p > maxDecimalPrecision {
		return sqlType{}, fmt.Errorf("decimal(%d,%d) is more than a decimal holds (%d digits)", p, scale, maxDecimalPrecision)
	}
	return sqlType{kind: kindDecimal, precision: p, scale: scale}, nil
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
			b.WriteString(`\000`) // not \0: a digit after it would read as octal
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

func (e *negExpr) sql() string    { return "(-(" + e.x.sql() + "))" } // "-1" would be a literal
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
