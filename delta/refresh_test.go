package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefreshExtendsLatest: a refresh that finds new commits builds the new
// latest snapshot from the previous one's segment plus the new commits (one
// LIST from the next version, no second listing), gets the same files as a
// fresh load, uses a checkpoint written meanwhile, and still reports a gap
// in the new commits.
func TestRefreshExtendsLatest(t *testing.T) {
	root := writeLog(t, map[int64][]string{
		0: append(header(), addLine("a", "")),
		1: {addLine("b", "")},
		2: {removeLine("a", ""), addLine("c", "")},
	})
	cs := &countingStore{Storage: dirStore{root}}
	tbl := Open(cs, Options{})
	ctx := context.Background()
	if s, err := tbl.Latest(ctx); err != nil || s.Version() != 2 {
		t.Fatalf("first load: %v, %v", s, err)
	}
	write := func(v int64, lines ...string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(CommitKey(v)))
		if err := os.WriteFile(p, []byte(lines[0]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(3, addLine("d", ""))
	write(4, removeLine("b", ""))
	cs.lists = nil
	s, err := tbl.Latest(ctx)
	if err != nil || s.Version() != 4 {
		t.Fatalf("refresh: %v, %v", s, err)
	}
	if len(cs.lists) != 1 || cs.lists[0] != LogDir+"@"+versionPrefix(2) {
		t.Errorf("refresh listed %v, want one LIST from version 2 (the last seen, which must still be there)", cs.lists)
	}
	fresh, err := Open(dirStore{root}, Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := livePaths(s), livePaths(fresh); got != want || got != "c#,d#" {
		t.Errorf("refreshed files %q, fresh load %q, want c#,d#", got, want)
	}
	if seg := s.segment; seg == nil || seg.CheckpointVersion != -1 || len(seg.Commits) != 5 {
		t.Errorf("segment %+v, want commits 0..4 without checkpoint", seg)
	}

	// A gap in the new commits is still an error naming the missing one.
	write(6, addLine("f", ""))
	if _, err := tbl.Latest(ctx); !errors.Is(err, ErrCorruptLog) {
		t.Errorf("refresh over a missing commit 5: %v, want ErrCorruptLog", err)
	}
	write(5, addLine("e", ""))
	if s, err := tbl.Latest(ctx); err != nil || s.Version() != 6 || livePaths(s) != "c#,d#,e#,f#" {
		t.Errorf("after the gap is filled: %v, %v", s, err)
	}

	// A checkpoint written since the last refresh is the new segment's base.
	write(7, removeLine("c", ""))
	at7, err := Open(dirStore{root}, Options{}).Snapshot(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, dirStore{root}, at7); err != nil {
		t.Fatal(err)
	}
	write(8, addLine("g", ""))
	s, err = tbl.Latest(ctx)
	if err != nil || s.Version() != 8 || livePaths(s) != "d#,e#,f#,g#" {
		t.Fatalf("after a checkpoint: %v, %v", s, err)
	}
	if seg := s.segment; seg.CheckpointVersion != 7 || len(seg.Commits) != 1 {
		t.Errorf("segment %+v, want checkpoint 7 and commit 8", seg)
	}
}

// TestRefreshNoticesTableChanged: a refresh after the log was deleted, or
// after another table (another metaData.id) took the location with more
// versions, fails with ErrTableChanged instead of keeping the old latest
// as if nothing happened.
func TestRefreshNoticesTableChanged(t *testing.T) {
	ctx := context.Background()
	root := writeLog(t, map[int64][]string{0: append(header(), addLine("a", "")), 1: {addLine("b", "")}})
	tbl := Open(dirStore{root}, Options{})
	if _, err := tbl.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "_delta_log")); err != nil {
		t.Fatal(err)
	}
	if s, err := tbl.Latest(ctx); !errors.Is(err, ErrTableChanged) {
		t.Errorf("refresh of a deleted log: %v, %v; want ErrTableChanged", s, err)
	}

	root = writeLog(t, map[int64][]string{0: append(header(), addLine("a", ""))})
	tbl = Open(dirStore{root}, Options{})
	if _, err := tbl.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	other := []string{header()[0], strings.Replace(header()[1], `"id":"t"`, `"id":"other"`, 1), addLine("x", "")}
	for v, lines := range map[int64][]string{0: other, 1: {addLine("y", "")}} {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(CommitKey(v))), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := tbl.Latest(ctx); !errors.Is(err, ErrTableChanged) || !strings.Contains(err.Error(), "rewritten") {
		t.Errorf("refresh of a replaced table: %v, %v; want ErrTableChanged (commit 0 rewritten)", s, err)
	}

	// The old commits untouched, a newer one with another table's metaData.
	root = writeLog(t, map[int64][]string{0: append(header(), addLine("a", ""))})
	tbl = Open(dirStore{root}, Options{})
	if _, err := tbl.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(CommitKey(1))), []byte(other[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := tbl.Latest(ctx); !errors.Is(err, ErrTableChanged) || !strings.Contains(err.Error(), "other") {
		t.Errorf("refresh onto another metaData.id: %v, %v; want ErrTableChanged naming the new id", s, err)
	}
}
