package delta

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Spec selects a snapshot: the latest version, a version number, or the
// version current at a point in time. Exactly one of Latest, IsTime or
// neither (a version) applies.
type Spec struct {
	Latest  bool
	Version int64     // when !Latest && !IsTime
	Time    time.Time // when IsTime
	IsTime  bool
}

// maxSpecVersionDigits bounds "vN" so that N fits an int64 comfortably.
const maxSpecVersionDigits = 18

// specTimeLayouts are the accepted timestamp forms besides the 17-digit
// yyyyMMddHHmmssSSS one; all without a zone are UTC.
var specTimeLayouts = []string{
	"2006-01-02",          // a date: UTC midnight
	time.RFC3339Nano,      // "Z" or an offset, optional fraction
	"2006-01-02T15:04:05", // no zone: UTC; optional fraction
}

// ParseSpec parses a snapshot spec:
//
//	latest                      the latest version
//	vN                          version N: decimal digits only (no sign, no leading zeros
//	                            except "v0"), at most 18 digits
//	2026-05-01                  UTC midnight of that date
//	2026-05-01T14:30:00Z        RFC 3339 with "Z" or an offset ("+02:00"), optional fraction
//	2026-05-01T14:30:00[.f]     no zone: UTC
//	20260501143000123           Delta's yyyyMMddHHmmssSSS (17 digits), UTC
//
// Anything else is an error wrapping ErrInvalidSpec that quotes the input.
func ParseSpec(s string) (Spec, error) {
	switch {
	case s == "latest":
		return Spec{Latest: true}, nil
	case strings.HasPrefix(s, "v"):
		return parseVersionSpec(s)
	case len(s) == 17 && allDigits(s):
		ts, err := time.Parse("20060102150405", s[:14])
		if err != nil {
			return Spec{}, invalidSpec(s)
		}
		ms, _ := strconv.Atoi(s[14:])
		return Spec{IsTime: true, Time: ts.Add(time.Duration(ms) * time.Millisecond)}, nil
	}
	for _, layout := range specTimeLayouts {
		if ts, err := time.Parse(layout, s); err == nil {
			return Spec{IsTime: true, Time: ts}, nil
		}
	}
	return Spec{}, invalidSpec(s)
}

func parseVersionSpec(s string) (Spec, error) {
	d := s[1:]
	if d == "" || len(d) > maxSpecVersionDigits || !allDigits(d) || (len(d) > 1 && d[0] == '0') {
		return Spec{}, invalidSpec(s)
	}
	v, err := strconv.ParseInt(d, 10, 64)
	if err != nil {
		return Spec{}, invalidSpec(s)
	}
	return Spec{Version: v}, nil
}

func invalidSpec(s string) error {
	return fmt.Errorf("%w: %q (want latest, vN, YYYY-MM-DD, an RFC 3339 time or yyyyMMddHHmmssSSS)",
		ErrInvalidSpec, s)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// String returns the canonical text of the spec: "latest", "vN", or the
// time in UTC as RFC 3339 with "Z" and only the fraction digits needed.
// ParseSpec(s.String()) selects the same snapshot as s.
func (s Spec) String() string {
	switch {
	case s.Latest:
		return "latest"
	case s.IsTime:
		return s.Time.UTC().Format(time.RFC3339Nano)
	}
	return "v" + strconv.FormatInt(s.Version, 10)
}
