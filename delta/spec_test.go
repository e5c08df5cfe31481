package delta

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	at := func(ts time.Time) Spec { return Spec{IsTime: true, Time: ts} }
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	tests := []struct {
		in   string
		want Spec
		str  string // canonical String(); "" means in
	}{
		{"latest", Spec{Latest: true}, ""},
		{"v0", Spec{Version: 0}, ""},
		{"v42", Spec{Version: 42}, ""},
		{"v999999999999999999", Spec{Version: 999999999999999999}, ""},
		{"2026-05-01", at(utc(2026, 5, 1, 0, 0, 0, 0)), "2026-05-01T00:00:00Z"},
		{"2026-05-01T14:30:00Z", at(utc(2026, 5, 1, 14, 30, 0, 0)), ""},
		{"2026-05-01T14:30:00+02:00", at(utc(2026, 5, 1, 12, 30, 0, 0)), "2026-05-01T12:30:00Z"},
		{"2026-05-01T14:30:00.123456789-01:30", at(utc(2026, 5, 1, 16, 0, 0, 123456789)), "2026-05-01T16:00:00.123456789Z"},
		{"2026-05-01T14:30:00", at(utc(2026, 5, 1, 14, 30, 0, 0)), "2026-05-01T14:30:00Z"},
		{"2026-05-01T14:30:00.25", at(utc(2026, 5, 1, 14, 30, 0, 25e7)), "2026-05-01T14:30:00.25Z"},
		{"20260501143000123", at(utc(2026, 5, 1, 14, 30, 0, 123e6)), "2026-05-01T14:30:00.123Z"},
	}
	for _, tt := range tests {
		got, err := ParseSpec(tt.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tt.in, err)
			continue
		}
		if got.Latest != tt.want.Latest || got.IsTime != tt.want.IsTime || got.Version != tt.want.Version ||
			!got.Time.Equal(tt.want.Time) {
			t.Errorf("ParseSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		want := tt.str
		if want == "" {
			want = tt.in
		}
		if got.String() != want {
			t.Errorf("ParseSpec(%q).String() = %q, want %q", tt.in, got.String(), want)
		}
		again, err := ParseSpec(got.String())
		if err != nil || again.String() != got.String() {
			t.Errorf("String() of %q does not re-parse: %v", tt.in, err)
		}
	}
}

func TestParseSpecInvalid(t *testing.T) {
	for _, in := range []string{
		"", "Latest", " latest", "v", "v-1", "v+1", "V1", "v01", "v1.0", "v1e3", "v 1",
		"v9999999999999999999", "v1234567890123456789", "7", "-1",
		"2026-5-1", "2026-02-30", "2026-05-01 14:30:00", "2026-05-01T14:30", "2026-05-01T24:00:00Z",
		"2026-05-01T14:30:00z", "2026-05-01T14:30:00+0200", "2026-05-01Z", "20260501", "2026050114300012",
		"202605011430001234", "20261301143000123", "20260501143000-12", "yesterday", "@v1",
	} {
		_, err := ParseSpec(in)
		if !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("ParseSpec(%q) = %v, want ErrInvalidSpec", in, err)
			continue
		}
		if !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("error %q does not quote the input %q", err, in)
		}
	}
}
