package main

import "testing"

func TestUmaskFlag(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want uint32
		ok   bool
	}{
		{"", 0, true}, {"027", 0o27, true}, {"0o077", 0o77, true}, {"777", 0o777, true},
		{"1000", 0, false}, {"8", 0, false}, {"-1", 0, false}, {"abc", 0, false},
	} {
		args := []string{"/t", "/mnt"}
		if tc.arg != "" {
			args = append([]string{"--umask", tc.arg}, args...)
		}
		cfg, _, err := resolveArgs(t, args...)
		if (err == nil) != tc.ok || err == nil && cfg.Umask != tc.want {
			t.Errorf("--umask %q: Umask %o, err %v; want %o, ok=%v", tc.arg, cfg.Umask, err, tc.want, tc.ok)
		}
	}
}

func TestTablesCount(t *testing.T) {
	if got := tablesCount(1); got != "1 table" {
		t.Errorf("tablesCount(1) = %q", got)
	}
	if got := tablesCount(3); got != "3 tables" {
		t.Errorf("tablesCount(3) = %q", got)
	}
}
