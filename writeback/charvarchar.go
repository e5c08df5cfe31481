package writeback

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/deltafs/deltafs/delta"
)

// metaCharVarchar is the field metadata in which Spark keeps a CHAR(n) or
// VARCHAR(n) column's declared type; the Delta schema says "string"
// (CharVarcharUtils.CHAR_VARCHAR_TYPE_STRING_METADATA_KEY).
const metaCharVarchar = "__CHAR_VARCHAR_TYPE_STRING"

var charVarcharType = regexp.MustCompile(`^(?i)(char|character|varchar)\s*\(\s*(\d+)\s*\)$`)

// charLenExpr is the length check Spark adds when it writes a CHAR(n) or
// VARCHAR(n) column (CharVarcharUtils.stringLengthCheck). Spark stores
// what passes after rewriting it: a VARCHAR value longer than n whose
// excess is trailing spaces is stored trimmed, a CHAR value is stored
// padded to n characters (charTypeWriteSideCheck). An appender stores the
// file's values as they are, so it accepts only what Spark would store
// unchanged: at most n characters for VARCHAR, exactly n for CHAR
// (characters are code points, UTF8String.numChars).
type charLenExpr struct {
	col  *colExpr
	n    int
	char bool
}

func (e *charLenExpr) sql() string {
	kind := "varchar"
	if e.char {
		kind = "char"
	}
	return fmt.Sprintf("(%s fits %s(%d))", e.col.sql(), kind, e.n)
}

// charVarcharCheck returns the length check of field f at path fp when its
// metadata declares CHAR(n) or VARCHAR(n); an unreadable declaration, or
// one inside an array or a map (not evaluated per element here), is an
// error.
func charVarcharCheck(f *delta.StructField, fp []string, inContainer bool) (tableConstraint, bool, error) {
	raw, ok := f.Metadata[metaCharVarchar]
	if !ok {
		return tableConstraint{}, false, nil
	}
	label := "CHAR/VARCHAR type of column " + dotted(fp)
	text, _ := raw.(string)
	m := charVarcharType.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return tableConstraint{}, false, fmt.Errorf("%s: unreadable %s metadata %v", label, metaCharVarchar, raw)
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n <= 0 {
		return tableConstraint{}, false, fmt.Errorf("%s: bad length in %s", label, text)
	}
	char := !strings.EqualFold(m[1], "varchar")
	if char {
		label = fmt.Sprintf("length of column %s, declared %s (Spark stores exactly %d characters: it refuses longer values and pads shorter ones, which an append would store unpadded)", dotted(fp), text, n)
	} else {
		label = fmt.Sprintf("length of column %s, declared %s (Spark refuses a value over %d characters, or stores it with its trailing spaces trimmed, which an append would store untrimmed)", dotted(fp), text, n)
	}
	if inContainer {
		return tableConstraint{}, false, fmt.Errorf("%s is inside an array or a map, whose lengths deltafs does not check", label)
	}
	if p, ok := f.Type.(delta.PrimitiveType); !ok || p.Name != "string" {
		return tableConstraint{}, false, fmt.Errorf("%s: declared on a %s column", label, f.Type)
	}
	expr := &charLenExpr{col: &colExpr{path: fp}, n: n, char: char}
	return tableConstraint{label: label, expr: expr}, true, nil
}

// compileCharLen compiles the check: true when the value is stored as
// Spark would store it, null values pass (NOT NULL is checked apart).
func compileCharLen(e *charLenExpr, resolve columnResolver) (evalFn, sqlType, error) {
	x, t, err := compileSQL(e.col, resolve)
	if err != nil {
		return nil, t, err
	}
	if t.kind != kindString {
		return nil, t, fmt.Errorf("a length check on a %s", t)
	}
	return func(row []sqlValue) (sqlValue, error) {
		v, err := x(row)
		if err != nil || v.isNull() {
			return boolValue(true), err
		}
		n := utf8.RuneCountInString(v.s)
		if e.char {
			return boolValue(n == e.n), nil
		}
		return boolValue(n <= e.n), nil
	}, sqlType{kind: kindBool}, nil
}
