package delta

// Partition values [PROTOCOL.md "Partition Value Serialization"]: parsing
// the strings of partitionValues into typed values, formatting typed
// values back, and the canonical form two spellings of one value share.

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deltafs/deltafs/delta/action"
)

// HiveDefaultPartition is the directory value Spark/Hive use for a null (or
// empty string) partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// ErrInvalidPartitionPath: a Hive-style partition path segment
// ("col=value") cannot be parsed.
var ErrInvalidPartitionPath = errors.New("invalid partition path segment")

// Layouts of partition value strings [§Partition Value Serialization].
const (
	dateLayout         = "2006-01-02"
	spaceTSLayout      = "2006-01-02 15:04:05" // fraction accepted when parsing
	isoTSLayoutNoZone  = "2006-01-02T15:04:05"
	timestampOutLayout = "2006-01-02T15:04:05.000000Z"
	timestampNTZLayout = "2006-01-02 15:04:05.000000"
)

// ParsePartitionValue converts a serialized partition value of type t to Go:
//
//	nil or ""                          nil (null, for every type)
//	string                             string
//	byte, short, integer, long         int64, range-checked for the type
//	float, double                      float64; Java text accepted ("1.0E-5", "NaN", "Infinity")
//	decimal(p,s)                       *big.Rat, checked to fit p and s; exponent text ("0E-10") accepted
//	boolean                            bool ("true"/"false", any case)
//	date                               time.Time, UTC midnight
//	timestamp                          time.Time in UTC: "YYYY-MM-DD HH:MM:SS[.f]" is read as UTC
//	                                   (the writer's zone is unknown; UTC in practice), ISO-8601 with
//	                                   "T" and "Z" or an offset is converted to UTC
//	timestamp_ntz                      time.Time whose UTC fields are the wall clock
//	binary                             []byte of the string
//
// Other types (struct, array, map, variant, unknown) cannot be partition
// columns: an error. Errors wrap ErrCorruptLog and name the value and type.
func ParsePartitionValue(t DataType, v *string) (any, error) {
	if v == nil || *v == "" {
		return nil, nil
	}
	s := *v
	out, err := parsePartitionString(t, s)
	if err != nil {
		return nil, corruptf("partition value %q of type %s: %v", s, action.TypeString(t), err)
	}
	return out, nil
}

// CanonicalPartitionValue parses a partition value a writer was given (a
// directory name, a flag) for a column of type t and returns it as the
// log serializes it ("007" -> "7" for an int). Null is spelled one way
// for every input: nil, "" and __HIVE_DEFAULT_PARTITION__ (what Spark,
// Hive, DuckDB and pyarrow write for a null) are null, whether the value
// came from an inbox directory or a --partition flag. A value that is not
// valid UTF-8 is refused: the log is JSON text and would carry U+FFFD in
// its place. A timestamp_ntz value with a zone or offset keeps its wall
// clock, as Spark's cast of a string to timestamp_ntz ignores the zone.
// Its error names the value and the type, and wraps no sentinel: the value
// is the caller's input, not a log's.
func CanonicalPartitionValue(t DataType, v *string) (*string, error) {
	if v == nil || *v == "" || *v == HiveDefaultPartition {
		return nil, nil
	}
	if !utf8.ValidString(*v) {
		return nil, fmt.Errorf("partition value %q is not valid UTF-8 (the log holds partition values as JSON text, which cannot carry it)", *v)
	}
	parsed, err := parsePartitionString(t, *v)
	if err != nil {
		return nil, fmt.Errorf("partition value %q is not a %s: %v", *v, action.TypeString(t), err)
	}
	return FormatPartitionValue(t, parsed)
}

func parsePartitionString(t DataType, s string) (any, error) {
	if d, ok := t.(DecimalType); ok {
		return parseDecimal(d, s)
	}
	p, ok := t.(PrimitiveType)
	if !ok {
		return nil, fmt.Errorf("not a partitionable type")
	}
	switch p.Name {
	case "string":
		return s, nil
	case "binary":
		return []byte(s), nil
	case "byte", "short", "integer", "long":
		return strconv.ParseInt(strings.TrimSpace(s), 10, intBits(p.Name))
	case "float":
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
		return f, err
	case "double":
		return strconv.ParseFloat(strings.TrimSpace(s), 64)
	case "boolean":
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("not true or false")
	case "date":
		return time.Parse(dateLayout, s)
	case "timestamp":
		return parseTimestamp(s)
	case "timestamp_ntz":
		return parseTimestampNTZ(s)
	}
	return nil, fmt.Errorf("not a partitionable type")
}

// intBits is the bit size of a Delta integral type.
func intBits(name string) int {
	switch name {
	case "byte":
		return 8
	case "short":
		return 16
	case "integer":
		return 32
	}
	return 64
}

// parseTimestamp reads "YYYY-MM-DD HH:MM:SS[.f]" or ISO-8601 with "T", each
// with an optional "Z" or numeric offset (absent means UTC), returning UTC.
func parseTimestamp(s string) (time.Time, error) {
	ts, _, err := parseTimestampZone(s)
	return ts.UTC(), err
}

// parseTimestampNTZ reads the forms parseTimestamp reads and returns the
// wall clock as written, zone or offset ignored: Spark casts a string to
// timestamp_ntz with DateTimeUtils.stringToTimestampWithoutTimeZone
// (allowTimeZone = true), which drops the zone instead of shifting.
func parseTimestampNTZ(s string) (time.Time, error) {
	ts, _, err := parseTimestampZone(s)
	if err != nil {
		return time.Time{}, err
	}
	return time.Date(ts.Year(), ts.Month(), ts.Day(), ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond(), time.UTC), nil
}

// parseTimestampZone parses s in the location its zone names (UTC when it
// names none); zoned reports whether it named one.
func parseTimestampZone(s string) (ts time.Time, zoned bool, err error) {
	layouts := [][2]string{{spaceTSLayout, spaceTSLayout + "Z07:00"}, {isoTSLayoutNoZone, time.RFC3339Nano}}
	l := layouts[0]
	if strings.Contains(s, "T") {
		l = layouts[1]
	}
	if ts, err = time.Parse(l[0], s); err == nil {
		return ts, false, nil
	}
	if ts, zerr := time.Parse(l[1], s); zerr == nil {
		return ts, true, nil
	}
	return time.Time{}, false, err
}

// parseDecimal reads plain or exponent decimal text and checks that it has
// at most d.Scale fraction digits and d.Precision digits in all.
func parseDecimal(d DecimalType, s string) (*big.Rat, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "/_") || strings.HasPrefix(strings.ToLower(s), "0x") {
		return nil, fmt.Errorf("not a decimal number")
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("not a decimal number")
	}
	if _, err := decimalUnscaled(d, r); err != nil {
		return nil, err
	}
	return r, nil
}

// decimalUnscaled returns r·10^scale, which must be an integer of at most
// d.Precision digits.
func decimalUnscaled(d DecimalType, r *big.Rat) (*big.Int, error) {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow))
	if !scaled.IsInt() {
		return nil, fmt.Errorf("more than %d fraction digits", d.Scale)
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Precision)), nil)
	if new(big.Int).Abs(scaled.Num()).Cmp(limit) >= 0 {
		return nil, fmt.Errorf("more than %d digits", d.Precision)
	}
	return scaled.Num(), nil
}

// FormatPartitionValue serializes a Go value for add.partitionValues, the
// inverse of ParsePartitionValue: nil → nil (null); string → itself;
// integral types take any Go integer kind in the type's range; float and
// double take float32/float64 and are written as Java's Double.toString
// would ("1.0", "1.0E-5", "NaN", "Infinity"); decimal takes *big.Rat, a
// decimal string or a Go integer and is written with exactly Scale fraction
// digits ("12.30"); boolean takes bool; date takes time.Time (its calendar
// date in its own location); timestamp takes time.Time, written in UTC as
// yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z' (truncated to microseconds);
// timestamp_ntz takes time.Time, its wall clock written as
// yyyy-MM-dd HH:mm:ss.SSSSSS; binary takes []byte or string.
//
// Note that an empty string or empty binary value serializes to "" which
// every reader takes as null: the protocol cannot express it.
func FormatPartitionValue(t DataType, v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	s, err := formatPartition(t, v)
	if err != nil {
		return nil, fmt.Errorf("format partition value %v (%T) as %s: %w", v, v, action.TypeString(t), err)
	}
	return &s, nil
}

func formatPartition(t DataType, v any) (string, error) {
	if d, ok := t.(DecimalType); ok {
		return formatDecimal(d, v)
	}
	p, ok := t.(PrimitiveType)
	if !ok {
		return "", fmt.Errorf("not a partitionable type")
	}
	switch p.Name {
	case "string", "binary":
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case "byte", "short", "integer", "long":
		if i, ok := toInt64(v); ok {
			bits := intBits(p.Name)
			if i < -1<<(bits-1) || i > 1<<(bits-1)-1 {
				return "", fmt.Errorf("out of range")
			}
			return strconv.FormatInt(i, 10), nil
		}
	case "float", "double":
		return formatFloat(p.Name, v)
	case "boolean":
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b), nil
		}
	case "date", "timestamp", "timestamp_ntz":
		if ts, ok := v.(time.Time); ok {
			// Years outside 0000-9999 have no text readers parse back.
			if y := formatYear(p.Name, ts); y < 0 || y > 9999 {
				return "", fmt.Errorf("year %d is outside 0000-9999", y)
			}
			return formatTime(p.Name, ts), nil
		}
	default:
		return "", fmt.Errorf("not a partitionable type")
	}
	return "", fmt.Errorf("unsupported Go type for %s", p.Name)
}

// formatYear is the year formatTime writes for ts.
func formatYear(typ string, ts time.Time) int {
	if typ == "timestamp" {
		return ts.UTC().Year()
	}
	return ts.Year()
}

func formatTime(typ string, ts time.Time) string {
	switch typ {
	case "date":
		return ts.Format(dateLayout)
	case "timestamp":
		return ts.UTC().Truncate(time.Microsecond).Format(timestampOutLayout)
	}
	return ts.Truncate(time.Microsecond).Format(timestampNTZLayout)
}

// toInt64 converts any Go integer kind to int64 (false for uint64 values
// above MaxInt64 and non-integers).
func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		return int64(x), x <= math.MaxInt64
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

func formatDecimal(d DecimalType, v any) (string, error) {
	var r *big.Rat
	switch x := v.(type) {
	case *big.Rat:
		r = x
	case string:
		var err error
		if r, err = parseDecimal(d, x); err != nil {
			return "", err
		}
	default:
		i, ok := toInt64(v)
		if !ok {
			return "", fmt.Errorf("unsupported Go type for %s", d)
		}
		r = new(big.Rat).SetInt64(i)
	}
	if r == nil {
		return "", fmt.Errorf("nil *big.Rat")
	}
	if _, err := decimalUnscaled(d, r); err != nil {
		return "", err
	}
	return r.FloatString(d.Scale), nil
}

// formatFloat writes a float like Java's Float/Double.toString: plain
// notation with at least one fraction digit for 1e-3 <= |x| < 1e7,
// otherwise computerized scientific notation ("1.0E-5", "1.2345E7").
func formatFloat(typ string, v any) (string, error) {
	bits := 64
	if typ == "float" {
		bits = 32
	}
	var f float64
	switch x := v.(type) {
	case float64:
		if bits == 32 && !math.IsInf(x, 0) && !math.IsNaN(x) && float64(float32(x)) != x {
			return "", fmt.Errorf("not exactly representable as float")
		}
		f = x
	case float32:
		f = float64(x)
	default:
		return "", fmt.Errorf("unsupported Go type for %s", typ)
	}
	switch {
	case math.IsNaN(f):
		return "NaN", nil
	case math.IsInf(f, 1):
		return "Infinity", nil
	case math.IsInf(f, -1):
		return "-Infinity", nil
	}
	return javaFloatString(f, bits), nil
}

func javaFloatString(f float64, bits int) string {
	if a := math.Abs(f); f == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bits) // e.g. "1E-05", "1.2345E+07"
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// hiveEscape reports whether Spark's ExternalCatalogUtils.escapePathName
// escapes byte c (outside Windows): control characters 0x01-0x1F, DEL and
// "#%'*/:=?\^{[]; and NUL, which Spark leaves as is but no file name can
// hold. Bytes >= 0x80 (UTF-8 of non-ASCII) are never escaped.
func hiveEscape(c byte) bool {
	if c <= 0x1F || c == 0x7F {
		return true
	}
	return strings.IndexByte("\"#%'*/:=?\\^{[]", c) >= 0
}

// EscapeHivePathName escapes s as Spark's escapePathName does: each byte in
// the escape set (see HivePathSegment) becomes %XX with uppercase hex.
func EscapeHivePathName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if hiveEscape(c) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// HivePathSegment returns the Hive-style directory name "column=value" that
// Spark writes for a partition value: both sides escaped like Spark's
// ExternalCatalogUtils.escapePathName (control chars 0x00-0x1F, 0x7F and
// "#%'*/:=?\^{[] become %XX, uppercase hex; space and non-ASCII stay), and
// a null or empty value written as __HIVE_DEFAULT_PARTITION__. The column
// is the logical name; v is the serialized value of add.partitionValues.
// The layout is cosmetic: readers take values from the log, never paths.
func HivePathSegment(column string, v *string) string {
	if v == nil || *v == "" {
		return EscapeHivePathName(column) + "=" + HiveDefaultPartition
	}
	return EscapeHivePathName(column) + "=" + EscapeHivePathName(*v)
}

// UnescapeHivePathName reverses EscapeHivePathName: every "%XX" (two hex
// digits, any case) becomes the byte 0xXX, and the result must be valid
// UTF-8. For the escapes Spark writes (all below 0x80) this is Spark's
// unescapePathName; DuckDB, pyarrow and Hive tools percent-encode the UTF-8
// bytes of non-ASCII characters ("ü" is "%C3%BC"), and Spark never escapes
// a byte >= 0x80, so decoding such runs as UTF-8 reads both. Reading each
// %XX as U+00XX instead would turn "%C3%BC" into "Ã¼" without a word.
// A "%" not followed by two hex digits, or bytes (escaped or raw) that are
// not valid UTF-8 (a partition value is JSON text in the log), are errors
// wrapping ErrInvalidPartitionPath that say why.
func UnescapeHivePathName(s string) (string, error) {
	if !strings.Contains(s, "%") {
		if !utf8.ValidString(s) {
			return "", fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidPartitionPath, s)
		}
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: %q: truncated escape at byte %d", ErrInvalidPartitionPath, s, i)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%w: %q: bad escape %q", ErrInvalidPartitionPath, s, s[i:i+3])
		}
		b.WriteByte(byte(n))
		i += 2
	}
	out := b.String()
	if !utf8.ValidString(out) {
		return "", fmt.Errorf("%w: %q decodes to bytes that are not valid UTF-8 (%%XX escapes are read as the UTF-8 bytes of the value, as DuckDB and pyarrow write them)", ErrInvalidPartitionPath, s)
	}
	return out, nil
}

// ParseHiveSegment splits a directory name "column=value" at its first "="
// and unescapes both sides; __HIVE_DEFAULT_PARTITION__ gives a nil value.
// A segment without "=" or with an empty column is an error wrapping
// ErrInvalidPartitionPath.
func ParseHiveSegment(seg string) (column string, value *string, err error) {
	c, v, ok := strings.Cut(seg, "=")
	if !ok || c == "" {
		return "", nil, fmt.Errorf("%w: %q: want column=value", ErrInvalidPartitionPath, seg)
	}
	if column, err = UnescapeHivePathName(c); err != nil {
		return "", nil, err
	}
	if v == HiveDefaultPartition {
		return column, nil, nil
	}
	val, err := UnescapeHivePathName(v)
	if err != nil {
		return "", nil, err
	}
	return column, &val, nil
}
