package nodes

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
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

// Entries without a commit time (the root, status files, inbox/, @<time>
// links) carry the mount's start time, not 1970-01-01.
func TestFillAttrNoZeroTime(t *testing.T) {
	var a fuse.Attr
	fillAttr(&a, 1, syscall.S_IFDIR|0o555, fuse.Owner{}, 0, time.Time{})
	if a.Mtime == 0 || a.Ctime == 0 || int64(a.Mtime) != started.Unix() {
		t.Errorf("mtime %d ctime %d, want the start time %d", a.Mtime, a.Ctime, started.Unix())
	}
}

// A refusal's text is capped in _status.jsonl (issue 20: a 20 KB line
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

// Out of file descriptors is EMFILE / ENFILE, not EIO (issue 20): the
// caller learns which limit to raise.
func TestFdLimitErrnos(t *testing.T) {
	env := NewEnv(Options{})
	for _, c := range []struct {
		err  error
		want syscall.Errno
	}{
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, syscall.EMFILE},
		{fmt.Errorf("open data file: %w", &os.PathError{Op: "open", Path: "x", Err: syscall.ENFILE}), syscall.ENFILE},
		{errors.New("bad bytes"), syscall.EIO},
	} {
		if got := env.dataErrno("open", c.err); got != c.want {
			t.Errorf("dataErrno(%v) = %v, want %v", c.err, got, c.want)
		}
		if got := env.metaErrno("lookup", c.err); got != c.want {
			t.Errorf("metaErrno(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
