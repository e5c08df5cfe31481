package writeback

import (
	"context"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
)

// exprRow is the row the expression tests evaluate over.
var exprRow = map[string]struct {
	typ sqlType
	v   sqlValue
}{
	"i":    {sqlType{kind: kindInt, bits: 32}, intValue(7)},
	"l":    {sqlType{kind: kindInt, bits: 64}, intValue(9_223_372_036_854_775_000)},
	"neg":  {sqlType{kind: kindInt, bits: 32}, intValue(-5)},
	"b8":   {sqlType{kind: kindInt, bits: 8}, intValue(120)},
	"d":    {sqlType{kind: kindDecimal, precision: 9, scale: 2}, exactValue(big.NewRat(1234, 100))},
	"x":    {sqlType{kind: kindFloat, bits: 64}, floatValue(0.5)},
	"f":    {sqlType{kind: kindFloat, bits: 32}, floatValue(float64(float32(0.1)))},
	"nan":  {sqlType{kind: kindFloat, bits: 64}, floatValue(nanValue())},
	"s":    {sqlType{kind: kindString}, strValue("héllo_world%")},
	"flag": {sqlType{kind: kindBool}, boolValue(true)},
	"n":    {sqlType{kind: kindInt, bits: 64}, nullValue},
	"st.a": {sqlType{kind: kindInt, bits: 64}, intValue(3)},
}

func evalText(t *testing.T, text string) (sqlValue, error) {
	t.Helper()
	return evalOver(t, exprRow, text)
}

// evalOver evaluates text over the row of typed columns.
func evalOver(t *testing.T, cols map[string]struct {
	typ sqlType
	v   sqlValue
}, text string) (sqlValue, error) {
	t.Helper()
	exprRow := cols
	e, err := parseSQL(text)
	if err != nil {
		return nullValue, err
	}
	var row []sqlValue
	fn, _, err := compileSQL(e, func(path []string) (int, sqlType, error) {
		c, ok := exprRow[strings.ToLower(strings.Join(path, "."))]
		if !ok {
			return 0, sqlType{}, errors.New("no column " + strings.Join(path, "."))
		}
		row = append(row, c.v)
		return len(row) - 1, c.typ, nil
	})
	if err != nil {
		return nullValue, err
	}
	return fn(row)
}

func TestSQLSubsetEvaluates(t *testing.T) {
	for text, want := range map[string]string{
		"i > 0":                           "true",
		"I >= 7 AND neg < 0":              "true",
		"i = 7 OR n > 0":                  "true",
		"n > 0 OR i < 0":                  "null",
		"n > 0 AND i < 0":                 "false",
		"NOT i = 7":                       "false",
		"not (i <> 7)":                    "true",
		"n IS NULL":                       "true",
		"i IS NOT NULL AND n is not null": "false",
		"n <=> NULL":                      "true",
		"i <=> n":                         "false",
		"i IN (1, 2, 7)":                  "true",
		"i NOT IN (1, 2)":                 "true",
		"i IN (1, NULL)":                  "null",
		"i BETWEEN 7 AND 8":               "true",
		"i NOT BETWEEN 0 AND 6":           "true",
		"i + 3 * 2 = 13":                  "true",
		"(i + 3) * 2 = 20":                "true",
		"i / 2 = 3.5":                     "true",
		"i % 4 = 3":                       "true",
		"neg % 3 = -2":                    "true",
		"-neg = 5":                        "true",
		"i / 0 IS NULL":                   "error", // Spark 3.5: NULL, Spark 4: DIVIDE_BY_ZERO
		"d = 12.34":                       "true",
		"d * 2 > 24.67":                   "true",
		"d + i = 19.34":                   "true",
		"x < 1":                           "true",
		"x = 0.5D":                        "true",
		"f = 0.1":                         "false", // a float widened to double is not 0.1
		"f = 0.1F":                        "true",
		"nan > 1e308":                     "true", // Spark: NaN above every number
		"nan = nan":                       "true",
		"s = 'héllo_world%'":              "true",
		`s = "héllo_world%"`:              "true",
		"s LIKE 'h%'":                     "true",
		"s LIKE '_éllo%'":                 "true",
		`s LIKE '%\%'`:                    "true",
		`s LIKE 'h\_%'`:                   "false",
		"s NOT LIKE '%x%'":                "true",
		"s > 'a' AND s < 'i'":             "true",
		"flag":                            "true",
		"flag AND NOT flag":               "false",
		"flag = TRUE":                     "true",
		"st.a BETWEEN 1 AND 3":            "true",
		"`st`.`a` = 3":                    "true",
		"n + 1 > 0":                       "null",
		"l + 1000 > 0":                    "error",  // overflows bigint: Spark wraps around
		"b8 + b8 > 0":                     "error",  // tinyint + tinyint is a tinyint in Spark
		"i + 2147483647L > 0":             "true",   // bigint arithmetic
		"length(s) > 0":                   "refuse", // functions are outside the subset
		"s = 1":                           "refuse",
		"d / 2 > 1":                       "refuse", // Spark rounds decimal quotients
		"i >":                             "refuse",
		"i > 0 garbage":                   "refuse",
		"nope > 0":                        "refuse",
		"i + 1":                           "int",
	} {
		v, err := evalText(t, text)
		got := v.String()
		switch {
		case errors.Is(err, errOverflow), errors.Is(err, errDivideByZero):
			got = "error"
		case err != nil:
			got = "refuse"
		case v.kind != kindBool && v.kind != kindNull:
			got = "int"
		}
		if got != want {
			t.Errorf("%s = %s (%v), want %s", text, got, err, want)
		}
	}
}

func FuzzParseSQL(f *testing.F) {
	for _, s := range []string{"i > 0", "a.b IN (1, 2.5, 'x') AND NOT c IS NULL", "x BETWEEN -1e3 AND 5L", "s LIKE 'a\\%'",
		"`we``ird`.x <=> NULL OR (1 + 2) * 3 % 4 / 5 = 6BD", "((((((x))))))", "NOT NOT NOT x", "'unterminated", "1e999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseSQL(s)
		if err != nil {
			return
		}
		printed := e.sql()
		again, err := parseSQL(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", s, printed, err)
		}
		if again.sql() != printed {
			t.Fatalf("%q printed as %q, then as %q", s, printed, again.sql())
		}
		// Whatever compiles evaluates without panicking, over nulls too.
		for _, v := range []sqlValue{nullValue, intValue(-3), floatValue(nanValue())} {
			typ := sqlType{kind: kindInt, bits: 64}
			if v.kind == kindFloat {
				typ = sqlType{kind: kindFloat, bits: 64}
			}
			fn, _, err := compileSQL(e, func([]string) (int, sqlType, error) { return 0, typ, nil })
			if err == nil {
				_, _ = fn([]sqlValue{v})
			}
		}
	})
}

type checkRow struct {
	ID *int64 `parquet:"id,optional"`
	St *struct {
		A *int64 `parquet:"a,optional"`
	} `parquet:"st,optional"`
	S *string `parquet:"s,optional"`
}

func checkRows(ids ...int64) []checkRow {
	rows := make([]checkRow, len(ids))
	for i, id := range ids {
		rows[i] = checkRow{ID: ptr(id), S: ptr("x"), St: &struct {
			A *int64 `parquet:"a,optional"`
		}{A: ptr(id % 10)}}
	}
	return rows
}

var checkSchema = structSchema(field("id", `"long"`, true, ""),
	field("st", structSchema(field("a", `"long"`, true, "")), true, ""), field("s", `"string"`, true, ""))

// appendRows appends rows to the table dir and returns the error.
func appendRows(t *testing.T, dir string, rows []checkRow) error {
	t.Helper()
	src := writeParquet(t, "rows.parquet", rows)
	_, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "rows.parquet"}})
	return err
}

// CHECK constraints and invariants are enforced wherever they are present:
// keys of any case, on writer versions where the protocol calls them
// inactive; the first offending row is named with its values.
func TestConstraintsEnforced(t *testing.T) {
	invariant := `{"delta.invariants":"{\"expression\":{\"expression\":\"id > 0\"}}"}`
	for _, tc := range []struct {
		name  string
		table testTable
		bad   []int64
		want  string
	}{
		{"mixed-case key", testTable{schema: checkSchema, protocol: `{"minReaderVersion":1,"minWriterVersion":3}`,
			config: map[string]string{"Delta.Constraints.Positive": "id > 0"}},
			[]int64{3, -5, -6}, "CHECK constraint positive (id > 0) violated by row 2 of the file (counting from 1), with values: id = -5"},
		{"writer 2 (constraint inactive by protocol)", testTable{schema: checkSchema,
			config: map[string]string{"delta.constraints.small": "id < 100 AND st.a BETWEEN 0 AND 9"}},
			[]int64{1, 2, 300}, "CHECK constraint small (id < 100 AND st.a BETWEEN 0 AND 9) violated by row 3 of the file (counting from 1), with values: id = 300, st.a = 0"},
		{"invariant on writer 1", testTable{protocol: `{"minReaderVersion":1,"minWriterVersion":1}`,
			schema: structSchema(field("id", `"long"`, true, invariant),
				field("st", structSchema(field("a", `"long"`, true, "")), true, ""), field("s", `"string"`, true, ""))},
			[]int64{0}, "invariant of column id (id > 0) violated by row 1 of the file (counting from 1), with values: id = 0"},
		{"null is a violation", testTable{schema: checkSchema, config: map[string]string{"delta.constraints.named": "s LIKE 'x%' AND id > 0"}},
			nil, "CHECK constraint named (s LIKE 'x%' AND id > 0) violated by row 1 of the file (counting from 1), with values: s = null, id = 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.table.create(t)
			if err := appendRows(t, dir, checkRows(1, 2, 3)); err != nil {
				t.Fatalf("append of rows that hold: %v", err)
			}
			before := listFiles(t, dir)
			rows := checkRows(tc.bad...)
			if tc.bad == nil {
				rows = []checkRow{{ID: ptr[int64](1)}}
			}
			err := appendRows(t, dir, rows)
			if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("append of violating rows: %v\nwant ErrInvalidFile containing %q", err, tc.want)
			}
			if !reflect.DeepEqual(before, listFiles(t, dir)) {
				t.Errorf("refused append changed the table")
			}
		})
	}
}

// A constraint outside the subset makes the table unwritable, naming it.
func TestConstraintOutsideSubsetRefused(t *testing.T) {
	dir := testTable{schema: checkSchema, config: map[string]string{"delta.constraints.len": "length(s) > 0"}}.create(t)
	c := newCommitter(t, dir)
	werr := c.Writable(context.Background())
	err := appendRows(t, dir, checkRows(1))
	for _, e := range []error{werr, err} {
		if !errors.Is(e, ErrNotWritable) || !strings.Contains(e.Error(), "CHECK constraint len (length(s) > 0) is outside the SQL subset") {
			t.Errorf("error %v, want ErrNotWritable naming the constraint", e)
		}
	}
}

// A constraint reads partition columns from the file's partition values
// and columns under column mapping by their logical names.
func TestConstraintsOnPartitionsAndMappedColumns(t *testing.T) {
	tt := testTable{parts: []string{"Part"},
		protocol: `{"minReaderVersion":2,"minWriterVersion":5}`,
		config:   map[string]string{"delta.columnMapping.mode": "name", "delta.constraints.ok": "part IN ('a', 'b') AND ID > 0"},
		schema: structSchema(
			field("ID", `"long"`, true, `{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}`),
			field("Part", `"string"`, true, `{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-2"}`))}
	dir := tt.create(t)
	appendIDs := func(part string, id int64) error {
		src := writeParquet(t, "p.parquet", []struct {
			ID *int64 `parquet:"ID,optional"`
		}{{ID: ptr(id)}})
		_, err := newCommitter(t, dir).Append(context.Background(),
			[]File{{LocalPath: src, Name: "p.parquet", PartitionValues: map[string]*string{"Part": ptr(part)}}})
		return err
	}
	if err := appendIDs("a", 1); err != nil {
		t.Fatalf("append that holds: %v", err)
	}
	for _, tc := range []struct {
		part string
		id   int64
		want string
	}{
		{"c", 1, "with values: Part = c, ID = 1"},
		{"b", -1, "with values: Part = b, ID = -1"},
	} {
		err := appendIDs(tc.part, tc.id)
		if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "CHECK constraint ok") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("append part=%s id=%d: %v, want refused %q", tc.part, tc.id, err, tc.want)
		}
	}
}

// The rows are read in step across pages and row groups: the offending
// row is found and numbered across them.
func TestConstraintRowNumbersAcrossRowGroups(t *testing.T) {
	dir := testTable{schema: checkSchema, config: map[string]string{"delta.constraints.c": "id <> 3777 AND st.a >= 0"}}.create(t)
	ids := make([]int64, 5000)
	for i := range ids {
		ids[i] = int64(i)
	}
	src := writeRowGroups(t, checkRows(ids...), 999)
	_, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "big.parquet"}})
	want := "CHECK constraint c (id <> 3777 AND st.a >= 0) violated by row 3778 of the file (counting from 1), with values: id = 3777, st.a = 7"
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), want) {
		t.Errorf("append: %v, want %q", err, want)
	}
}
