package nodes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A range with more change files than a range directory lists is refused
// with a reason saying so (its plan would hold every file); a range within
// the bound lists its files.
func TestChangeRangeTooLarge(t *testing.T) {
	old := maxRangeFiles
	maxRangeFiles = 2
	t.Cleanup(func() { maxRangeFiles = old })
	dir, _ := mountTable(t, "delta-kernel-rs/cdf-table-simple")
	entries, err := os.ReadDir(filepath.Join(dir, ChangesName, "v0..v0"))
	if err != nil || len(entries) != 2 || !strings.HasSuffix(entries[0].Name(), ".parquet") {
		t.Fatalf("ls @changes/v0..v0: %v, %v; want its 2 change files", entries, err)
	}
	big := filepath.Join(dir, ChangesName, "v0..v2")
	entries, err = os.ReadDir(big)
	if err != nil || len(entries) != 1 || entries[0].Name() != ReasonName {
		t.Fatalf("ls @changes/v0..v2: %v, %v; want only %s", entries, err, ReasonName)
	}
	text, err := os.ReadFile(filepath.Join(big, ReasonName))
	if err != nil || !strings.Contains(string(text), "more than 2 change files") {
		t.Errorf("%s: %q, %v", ReasonName, text, err)
	}
}
