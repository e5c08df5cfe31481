package delta

import (
	"context"
	"errors"
	"testing"
)

// A version beyond the latest is named once, with the latest version
// (the message was "table T version 99: version not found: version 99").
func TestVersionNotFoundMessage(t *testing.T) {
	tbl := Open(dirStore{fixtureTable(t, "dat/basic_append")}, Options{})
	ctx := context.Background()
	want := "table " + tbl.Name() + ": version 99 not found (latest is 1)"
	_, err := tbl.Snapshot(ctx, 99)
	if !errors.Is(err, ErrVersionNotFound) || err.Error() != want {
		t.Errorf("Snapshot(99): %v\nwant %s (wrapping ErrVersionNotFound)", err, want)
	}
	_, err = tbl.Version(ctx, 99)
	if !errors.Is(err, ErrVersionNotFound) || err.Error() != want {
		t.Errorf("Version(99): %v\nwant %s (wrapping ErrVersionNotFound)", err, want)
	}
	var le *LogError
	if !errors.As(err, &le) || le.Version != 99 {
		t.Errorf("Version(99): %#v, want a LogError for version 99", err)
	}
}
