package delta

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
)

// failOnceStore fails the first read of one key with a transient error.
type failOnceStore struct {
	Storage
	key    string
	failed atomic.Bool
}

func (f *failOnceStore) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if key == f.key && f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("connection reset by peer")
	}
	return f.Storage.ReadRange(ctx, key, off, n)
}

// TestCheckpointVersionCommitReadError: the snapshot of a checkpointed
// version takes its commitInfo and time from the version's commit file. A
// transient failure to read that file must not yield (and cache) a
// snapshot without them: writers derive the next in-commit timestamp from
// it.
func TestCheckpointVersionCommitReadError(t *testing.T) {
	ci := `{"commitInfo":{"timestamp":5,"inCommitTimestamp":1700000000000,"operation":"WRITE"}}`
	root := writeLog(t, map[int64][]string{
		0: append(header(), addLine("a", "")),
		1: {addLine("b", "")},
		2: {ci, addLine("c", "")},
	})
	ctx := context.Background()
	snap, err := Open(dirStore{root}, Options{}).Snapshot(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, dirStore{root}, snap); err != nil {
		t.Fatal(err)
	}
	tbl := Open(&failOnceStore{Storage: dirStore{root}, key: CommitKey(2)}, Options{})
	s, err := tbl.Snapshot(ctx, 2)
	if err == nil && s.CommitInfo() == nil {
		t.Fatal("Snapshot(2) succeeded without the commitInfo of 2.json after a transient read error")
	}
	if s, err = tbl.Snapshot(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if s.CommitInfo() == nil || s.Timestamp().IsZero() {
		t.Errorf("retry: commitInfo %s, timestamp %v; want both from 2.json", s.CommitInfo(), s.Timestamp())
	}
}
