package nodes

import (
	"strings"
	"testing"
)

// Errors in _status.jsonl read as written: no HTML escapes of < > &.
func TestStatusLogNoHTMLEscapes(t *testing.T) {
	l := newStatusLog(4)
	l.add(StatusEvent{Op: "commit", File: "a&b.parquet", Error: "put the file in inbox/region=<value>/"})
	got := string(l.jsonl())
	if !strings.Contains(got, "region=<value>") || !strings.Contains(got, "a&b.parquet") || !strings.HasSuffix(got, "}\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("status line %q: want <value> and & unescaped, one line", got)
	}
}
