package inbox

import (
	"strings"
	"testing"
)

// Errors in _status.jsonl read as written: no HTML escapes of < > &.
func TestStatusLogNoHTMLEscapes(t *testing.T) {
	l := newStatusLog("")
	l.add(StatusEvent{Op: "commit", File: "a&b.parquet", Error: "put the file in inbox/region=<value>/"})
	got := string(l.jsonl())
	if !strings.Contains(got, "region=<value>") || !strings.Contains(got, "a&b.parquet") || !strings.HasSuffix(got, "}\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("status line %q: want <value> and & unescaped, one line", got)
	}
}

// A refusal's text is capped in _status.jsonl (a 20 KB line
// for a hostile schema), cut at a UTF-8 boundary and saying so.
func TestStatusLogCapsErrors(t *testing.T) {
	l := newStatusLog("")
	long := strings.Repeat("é", 10_000) // 20,000 bytes
	l.add(StatusEvent{Op: "commit", File: "x.parquet", Error: long})
	got := string(l.jsonl())
	if len(got) > statusErrorMax+200 || !strings.Contains(got, "bytes cut)") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("status line of %d bytes: want at most about %d, cut at a rune, saying so", len(got), statusErrorMax)
	}
}
