package writeback

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// The evaluator's outcomes, each following a named rule of Spark's source
// (apache/spark: sql/api/src/main/antlr4/.../SqlBaseLexer.g4 and
// SqlBaseParser.g4, SparkParserUtils.scala, AstBuilder.scala,
// TypeCoercion.scala, DecimalPrecision.scala, DecimalType.scala, Cast.scala,
// arithmetic.scala) for every case where deltafs judged otherwise. Where
// Spark 3.5 (spark.sql.ansi.enabled=false) and Spark 4 (ANSI by default)
// disagree, the row is refused naming both ("both").

var sparkRow = map[string]struct {
	typ sqlType
	v   sqlValue
}{
	"five":  {sqlType{kind: kindInt, bits: 32}, intValue(5)},
	"i":     {sqlType{kind: kindInt, bits: 32}, intValue(7)},
	"b8":    {sqlType{kind: kindInt, bits: 8}, intValue(-128)},
	"l":     {sqlType{kind: kindInt, bits: 64}, intValue(-9_223_372_036_854_775_808)},
	"lbig":  {sqlType{kind: kindInt, bits: 64}, intValue(9_007_199_254_740_993)},
	"s2":    {sqlType{kind: kindString}, strValue("é")},
	"emoji": {sqlType{kind: kindString}, strValue("😈")},
	"d38":   {sqlType{kind: kindDecimal, precision: 38, scale: 0}, exactValue(new(big.Rat).SetInt(pow10(37)))},
	"dmax":  {sqlType{kind: kindDecimal, precision: 38, scale: 0}, exactValue(new(big.Rat).SetInt(new(big.Int).Sub(pow10(38), big.NewInt(1))))},
	"x":     {sqlType{kind: kindFloat, bits: 64}, floatValue(0.5)},
}

func pow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }

func TestEvaluatorFollowsSpark(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // true, false, null; "refuse" (not evaluable: the table is unwritable); "both" (the row is refused naming both Spark rules)
		cite string
	}{
		// Comments are hidden tokens, not minus signs.
		{"five < 5 --1\nAND five > 0", "false", "SqlBaseLexer.g4 SIMPLE_COMMENT: '--' ('\\\\\\n' | ~[\\r\\n])* '\\r'? '\\n'?"},
		{"five = 5 -- comment \\\nAND five = 6", "true", "SqlBaseLexer.g4 SIMPLE_COMMENT: a backslash-newline continues the comment"},
		{"five /* comment */ = 5", "true", "SqlBaseLexer.g4 BRACKETED_COMMENT"},
		{"five /* outer /* nested */ still */ = 5", "true", "SqlBaseLexer.g4 BRACKETED_COMMENT: ( BRACKETED_COMMENT | . )*?"},
		{"five = 5 /* unclosed", "refuse", "SqlBaseLexer.g4 BRACKETED_COMMENT: markUnclosedComment at EOF fails the parse"},
		{"five = /*+ hint */ 5", "refuse", "SqlBaseLexer.g4 BRACKETED_COMMENT {!isHint()}? and HENT_START: a hint is not an expression"},
		{"five\u00a0=\u30005", "true", "SqlBaseLexer.g4 WS includes U+00A0 and U+3000"},
		{"five\u0085= 5", "refuse", "SqlBaseLexer.g4 WS does not include U+0085 (UNRECOGNIZED)"},
		// String escapes.
		{`s2 <> '\u00e9'`, "false", "SparkParserUtils.unescapeSQLString U16_CHAR_PATTERN \\\\u([a-fA-F0-9]{4})"},
		{`s2 = '\U000000E9'`, "true", "SparkParserUtils.unescapeSQLString U32_CHAR_PATTERN \\\\U([a-fA-F0-9]{8})"},
		{`emoji = '\U0001F608'`, "true", "SparkParserUtils.unescapeSQLString U32_CHAR_PATTERN: a supplementary code point as a surrogate pair"},
		{`emoji = '\uD83D\uDE08'`, "true", "SparkParserUtils.unescapeSQLString: two U16 escapes make one UTF-16 surrogate pair"},
		{`'\101' = 'A'`, "true", "SparkParserUtils.unescapeSQLString OCTAL_CHAR_PATTERN \\\\([01][0-7]{2})"},
		{`'\351' = '351'`, "true", "SparkParserUtils.unescapeSQLString: \\\\3 is not octal ([01] first), ESCAPED_CHAR_PATTERN gives '3'"},
		{`'\u12' = 'u12'`, "true", "SparkParserUtils.unescapeSQLString: \\\\u without 4 hex digits is ESCAPED_CHAR_PATTERN"},
		{`'\012' = '\n'`, "true", "SparkParserUtils.unescapeSQLString: OCTAL before ESCAPED (\\\\0 is NUL only when no octal follows)"},
		{`R'\u00e9' = '\\u00e9'`, "true", "SqlBaseLexer.g4 STRING_LITERAL 'R\\'' (~'\\'')* '\\'' and unescapeSQLString: raw strings keep backslashes"},
		{`s2 = '\uD800'`, "refuse", "a lone surrogate has no UTF-8 form (Spark's UTF8String would hold '?')"},
		// Literal forms: the sign belongs to the literal.
		{"b8 = -128Y", "true", "SqlBaseParser.g4 number: MINUS? TINYINT_LITERAL; AstBuilder.visitTinyIntLiteral range-checks with the sign"},
		{"l = -9223372036854775808L", "true", "SqlBaseParser.g4 number: MINUS? BIGINT_LITERAL; AstBuilder.visitBigIntLiteral"},
		{"b8 < 128Y", "refuse", "AstBuilder.visitTinyIntLiteral: 128 is out of tinyint range"},
		{"i * -2147483648 < 0", "both", "AstBuilder.visitIntegerLiteral: -2147483648 isValidInt, so int * int overflows (Multiply: legacy wraps, ANSI ARITHMETIC_OVERFLOW)"},
		{"i * -2147483649 < 0", "true", "AstBuilder.visitIntegerLiteral: -2147483649 is a bigint, int * bigint is bigint"},
		{"1.5E2BD = 150", "true", "AstBuilder.visitBigDecimalLiteral: BigDecimal(\"1.5E2\") is 150"},
		{"1.5L = 1", "refuse", "SqlBaseLexer.g4 BIGINT_LITERAL: DIGIT+ 'L' (no fraction)"},
		{"five = 5L2", "refuse", "SqlBaseLexer.g4: no literal form 5L2"},
		// IN at the common type of all its items.
		{"lbig IN (9007199254740992, 0.5D)", "true", "TypeCoercion.InConversion: findWiderCommonType(bigint, bigint, double) is double, lbig as a double is 9007199254740992"},
		{"lbig IN (9007199254740992, 1)", "false", "TypeCoercion.InConversion: common type bigint, compared exactly"},
		{"d38 IN (0.5, 1)", "both", "findWiderCommonType(decimal(38,0), decimal(1,1), int): DecimalPrecision.widerDecimalType bounded to decimal(38,1); 10^37 overflows it (Cast: legacy NULL, ANSI NUMERIC_VALUE_OUT_OF_RANGE)"},
		// Decimal comparisons at the common type capped at 38 digits.
		{"d38 > 0.5", "both", "DecimalPrecision: BinaryComparison of decimal(38,0) and decimal(1,1) casts both to bounded decimal(38,1)"},
		{"d38 > 1", "true", "DecimalPrecision.nondecimalAndDecimal: an integer literal is DecimalType.fromLiteral, decimal(1,0), so decimal(38,0) suffices"},
		{"d38 + 1 > 0", "true", "DecimalPrecision / DecimalType.adjustPrecisionScale: decimal(38,0) + decimal(1,0) is decimal(38,0) (scale <= 6 kept)"},
		{"dmax + 1 > 0", "both", "Add of decimal(38,0): 10^38 overflows decimal(38,0) (legacy NULL, ANSI NUMERIC_VALUE_OUT_OF_RANGE)"},
		// Division by zero.
		{"i / 0 IS NULL", "both", "Divide: legacy NULL (spark.sql.ansi.enabled=false), ANSI DIVIDE_BY_ZERO"},
		{"i % 0 IS NULL", "both", "Remainder: legacy NULL, ANSI DIVIDE_BY_ZERO"},
		{"x / 0.0D > 0", "both", "Divide on doubles: legacy NULL, ANSI DIVIDE_BY_ZERO"},
		{"i / 2 = 3.5", "true", "TypeCoercion Division: integer / integer is a double"},
	} {
		v, err := evalOver(t, sparkRow, tc.text)
		got := v.String()
		switch {
		case err != nil && strings.Contains(err.Error(), "Spark 3.5") && strings.Contains(err.Error(), "Spark 4"):
			got = "both"
		case err != nil:
			got = "refuse"
		}
		if got != tc.want {
			t.Errorf("%q = %s (%v), want %s per %s", tc.text, got, err, tc.want, tc.cite)
		}
	}
}

// TestLiteralTypesFollowSpark: the static type each literal gets.
func TestLiteralTypesFollowSpark(t *testing.T) {
	for _, tc := range []struct {
		text, want, cite string
	}{
		{"-2147483648", "int", "AstBuilder.visitIntegerLiteral: BigDecimal(\"-2147483648\").isValidInt"},
		{"2147483648", "bigint", "AstBuilder.visitIntegerLiteral: isValidLong"},
		{"-128Y", "tinyint", "AstBuilder.visitTinyIntLiteral"},
		{"-9223372036854775808L", "bigint", "AstBuilder.visitBigIntLiteral"},
		{"12345678901234567890123456789012345678", "decimal(38,0)", "AstBuilder.visitIntegerLiteral: Literal(BigDecimal)"},
		{"123456789012345678901234567890123456789", "refuse", "DecimalType: precision over MAX_PRECISION (38)"},
		{"1.5E2BD", "decimal(3,0)", "AstBuilder.visitBigDecimalLiteral, Decimal.set: a negative scale becomes 0"},
		{"1.5E-2BD", "decimal(3,3)", "Decimal.set: precision below scale becomes the scale"},
		{"0.01", "decimal(2,2)", "AstBuilder.visitDecimalLiteral, Decimal.set"},
		{"-1.50", "decimal(3,2)", "AstBuilder.visitDecimalLiteral: BigDecimal(\"-1.50\")"},
		{"1e3", "double", "AstBuilder.visitExponentLiteral (legacy_exponent_literal_as_decimal off by default)"},
		{"1.5E2", "double", "AstBuilder.visitExponentLiteral"},
		{"1.5F", "float", "AstBuilder.visitFloatLiteral"},
		{"1e400", "refuse", "AstBuilder.visitExponentLiteral: numericLiteral range check (Double.MaxValue)"},
	} {
		e, err := parseSQL(tc.text)
		got := "refuse"
		if err == nil {
			if lit, ok := e.(*litExpr); ok {
				got = lit.typ.String()
			} else {
				got = "not a literal"
			}
		}
		if got != tc.want {
			t.Errorf("%s: type %s (%v), want %s per %s", tc.text, got, err, tc.want, tc.cite)
		}
	}
}

// TestConstraintKeysDifferingInCase: Delta's Constraints.getCheckConstraints
// takes every configuration key starting with delta.constraints. (any
// case): two keys that differ only in case are two constraints, both
// enforced, on every run.
func TestConstraintKeysDifferingInCase(t *testing.T) {
	dir := testTable{schema: checkSchema, config: map[string]string{
		"delta.constraints.c": "id > 0", "delta.constraints.C": "id < 100",
	}}.create(t)
	for i := 0; i < 8; i++ { // map order varies per run: both must hold every time
		for _, id := range []int64{-1, 200} {
			err := appendRows(t, dir, checkRows(id))
			if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "CHECK constraint c") {
				t.Fatalf("append of id %d: %v, want it refused by a constraint", id, err)
			}
		}
	}
	if err := appendRows(t, dir, checkRows(50)); err != nil {
		t.Fatalf("append of id 50: %v", err)
	}
}

// TestCharVarcharLengthsEnforced: Spark writes a CHAR(n)/VARCHAR(n) column
// (a string with __CHAR_VARCHAR_TYPE_STRING metadata) through
// CharVarcharUtils.stringLengthCheck: longer values fail
// (EXCEED_LIMIT_LENGTH); a VARCHAR value whose excess is spaces is stored
// trimmed and a CHAR value padded to n, which an appender cannot do, so
// those are refused too. Lengths count code points (UTF8String.numChars).
func TestCharVarcharLengthsEnforced(t *testing.T) {
	type row struct {
		V *string `parquet:"v,optional"`
		C *string `parquet:"c,optional"`
	}
	dir := testTable{schema: structSchema(
		field("v", `"string"`, true, `{"__CHAR_VARCHAR_TYPE_STRING":"varchar(3)"}`),
		field("c", `"string"`, true, `{"__CHAR_VARCHAR_TYPE_STRING":"char(2)"}`),
	)}.create(t)
	appendOne := func(v, c *string) error {
		src := writeParquet(t, "cv.parquet", []row{{V: v, C: c}})
		_, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "cv.parquet"}})
		return err
	}
	for _, ok := range []row{{ptr("abc"), ptr("ab")}, {ptr("ééé"), ptr("😈😈")}, {nil, nil}, {ptr(""), ptr("  ")}} {
		if err := appendOne(ok.V, ok.C); err != nil {
			t.Errorf("append v=%v c=%v: %v", derefStr(ok.V), derefStr(ok.C), err)
		}
	}
	for _, bad := range []struct {
		v, c *string
		want string
	}{
		{ptr("abcd"), ptr("ab"), "length of column v, declared varchar(3)"},
		{ptr("abc "), ptr("ab"), "length of column v, declared varchar(3)"},
		{ptr("a"), ptr("abc"), "length of column c, declared char(2)"},
		{ptr("a"), ptr("a"), "length of column c, declared char(2)"},
	} {
		err := appendOne(bad.v, bad.c)
		if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("append v=%q c=%q: %v, want refused: %s", *bad.v, *bad.c, err, bad.want)
		}
	}
}

func derefStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
