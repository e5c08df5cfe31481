package delta

import (
	"errors"
	"testing"
	"time"
)

// Regressions found by fuzzing: values that parse but would be written
// back as text no reader parses, and keys no file name can hold.

func TestFormatPartitionRefusesYearsPast9999(t *testing.T) {
	for _, tc := range []struct {
		typ string
		ts  time.Time
	}{
		{"timestamp", time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("+01", 3600))}, // year -1 in UTC
		{"timestamp", time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("-02", -7200))},
		{"date", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"timestamp_ntz", time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if s, err := FormatPartitionValue(PrimitiveType{Name: tc.typ}, tc.ts); err == nil {
			t.Errorf("%s %v formatted as %q; want an error", tc.typ, tc.ts, *s)
		}
	}
	s, err := FormatPartitionValue(PrimitiveType{Name: "timestamp"}, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || *s != "0000-01-01T00:00:00.000000Z" {
		t.Errorf("year 0 = %v, %v", s, err)
	}
}

func TestResolvePathRefusesNUL(t *testing.T) {
	for _, p := range []string{"a%00b.parquet", "dir%00/x.parquet", "/t/a%00.parquet"} {
		if k, err := ResolvePath("/t", p); !errors.Is(err, ErrUnsupportedFeature) {
			t.Errorf("ResolvePath(%q) = %q, %v; want ErrUnsupportedFeature", p, k, err)
		}
	}
}
