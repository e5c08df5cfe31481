package delta

import (
	"testing"
	"time"
)

// A checkpoint marked bad is skipped until its mark expires, then tried
// again; the marks kept are bounded whatever was marked.
func TestBadCheckpointMarksExpire(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := badCheckpoints{now: func() time.Time { return now }}
	b.mark(10)
	if !b.live()[10] {
		t.Fatal("checkpoint 10 not marked bad right after mark")
	}
	now = now.Add(badCheckpointTTL - time.Second)
	b.mark(20)
	if got := b.live(); !got[10] || !got[20] {
		t.Fatalf("before the TTL: marks %v, want 10 and 20", got)
	}
	now = now.Add(time.Second)
	if got := b.live(); got[10] || !got[20] {
		t.Fatalf("at 10's TTL: marks %v, want only 20 (10 expired, to be tried again)", got)
	}
	for v := int64(100); v < 100+2*maxBadCheckpoints; v++ {
		now = now.Add(time.Millisecond)
		b.mark(v)
	}
	got := b.live()
	if len(got) != maxBadCheckpoints {
		t.Fatalf("%d marks kept after %d marked, want %d", len(got), 2*maxBadCheckpoints+2, maxBadCheckpoints)
	}
	if !got[100+2*maxBadCheckpoints-1] || got[100] {
		t.Fatalf("the newest mark must stay and the oldest go: %v", got)
	}
}

// A Table plans around a bad checkpoint while it is marked, and uses it
// again once the mark expired.
func TestBadCheckpointRetriedAfterTTL(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tbl := Open(dirStore{t.TempDir()}, Options{})
	tbl.bad.now = func() time.Time { return now }
	l := listingOfNames(0, []string{
		"00000000000000000000.json", "00000000000000000001.json",
		"00000000000000000001.checkpoint.parquet", "00000000000000000002.json",
	})
	tbl.bad.mark(1)
	seg, err := (&segmentPlanner{bad: tbl.bad.live()}).segment(2, l)
	if err != nil || seg.CheckpointVersion != -1 || len(seg.Commits) != 3 {
		t.Fatalf("with checkpoint 1 marked bad: %+v, %v; want commits 0..2 and no checkpoint", seg, err)
	}
	now = now.Add(badCheckpointTTL)
	seg, err = (&segmentPlanner{bad: tbl.bad.live()}).segment(2, l)
	if err != nil || seg.CheckpointVersion != 1 || len(seg.Commits) != 1 {
		t.Fatalf("after the TTL: %+v, %v; want checkpoint 1 and commit 2", seg, err)
	}
}
