package writeback

import (
	"context"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/pqfile"
)

func TestTruncateStrings(t *testing.T) {
	long := strings.Repeat("a", 40)
	maxRune := string(rune(0x10FFFF))
	for _, tc := range []struct {
		in, min string
		max     any
	}{
		{"short", "short", "short"},
		{long, long[:32], long[:32] + "\u007f"},
		{strings.Repeat("é", 33), strings.Repeat("é", 32), strings.Repeat("é", 32) + maxRune},
		// The next character is U+10FFFF: grow the prefix past it.
		{long[:32] + maxRune + "b" + long, long[:32], long[:32] + maxRune + "\u007f"},
		// Too many U+10FFFF to ever find a tie-breaker: no max.
		{long[:32] + strings.Repeat(maxRune, 40), long[:32], nil},
	} {
		if got := truncateMin(tc.in, 32); got != tc.min {
			t.Errorf("truncateMin(%q) = %q, want %q", tc.in, got, tc.min)
		}
		got, ok := truncateMax(tc.in, 32)
		if (tc.max == nil) == ok || (ok && got != tc.max) {
			t.Errorf("truncateMax(%q) = %q, %v; want %q", tc.in, got, ok, tc.max)
		}
		if ok && got.(string) < tc.in {
			t.Errorf("truncated max %q is below the value %q", got, tc.in)
		}
	}
}

func TestDecimalText(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		scale int
		want  string
	}{{12345, 2, "123.45"}, {-250, 2, "-2.50"}, {5, 3, "0.005"}, {-5, 1, "-0.5"}, {7, 0, "7"}} {
		if got := checkpoint.DecimalText(big.NewInt(tc.n), tc.scale); got != tc.want {
			t.Errorf("DecimalText(%d, %d) = %s, want %s", tc.n, tc.scale, got, tc.want)
		}
	}
	if got := bigOf([]byte{0xff, 0x06}); got.Int64() != -250 {
		t.Errorf("bigOf two's complement = %v, want -250", got)
	}
}

// Timestamps are truncated to milliseconds towards minus infinity, so
// that a min stays a lower bound before 1970 too.
func TestTimestampStats(t *testing.T) {
	el := &format.SchemaElement{}
	el.Type.V = format.Int64
	l := statLeaf{typ: delta.PrimitiveType{Name: "timestamp"}, node: &pqfile.SchemaNode{Element: el}}
	for micros, want := range map[int64]string{
		1_500:  "1970-01-01T00:00:00.001Z",
		-1_500: "1969-12-31T23:59:59.998Z",
		-1_000: "1969-12-31T23:59:59.999Z",
	} {
		if got, _ := encodeInt(l, micros); got != want {
			t.Errorf("timestamp %dµs = %v, want %s", micros, got, want)
		}
	}
	l.typ = delta.PrimitiveType{Name: "timestamp_ntz"}
	if got, _ := encodeInt(l, 1_500); got != "1970-01-01T00:00:00.001" {
		t.Errorf("timestamp_ntz = %v", got)
	}
}

// TestStatsSignedZero: -0.0 and +0.0 compare equal, so the bound
// kept was whichever came first; a max of -0.0 over a file holding 0.0
// (and a min of +0.0 over one holding -0.0) is not what the file holds
// (Parquet's statistics rules write +0.0 as a zero max, -0.0 as a zero min).
func TestStatsSignedZero(t *testing.T) {
	dir := testTable{schema: structSchema(field("c", `"double"`, true, ""))}.create(t)
	negZero := math.Copysign(0, -1)
	src := writeParquet(t, "z.parquet", []struct {
		C *float64 `parquet:"c,optional"`
	}{{C: ptr(negZero)}, {C: ptr(0.0)}})
	if _, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "z.parquet"}}); err != nil {
		t.Fatal(err)
	}
	add := latest(t, dir).Files()[0]
	if !strings.Contains(add.Stats, `"maxValues":{"c":0}`) || !strings.Contains(add.Stats, `"minValues":{"c":-0}`) {
		t.Errorf("stats %s: want min -0 and max 0", add.Stats)
	}
}
