package delta

import (
	"path/filepath"

	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// truncatingStore serves one key's body without its last line and no
// error, while listing its full size: a storage that silently cuts a body.
type truncatingStore struct {
	Storage
	key string
	off *bool // when set and true, bodies are served whole
}

func (s truncatingStore) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	rc, err := s.Storage.ReadRange(ctx, key, off, length)
	if err != nil || key != s.key || s.off != nil && *s.off {
		return rc, err
	}
	data, _ := io.ReadAll(rc)
	body := bytes.TrimSuffix(data, []byte("\n"))
	return io.NopCloser(bytes.NewReader(body[:bytes.LastIndexByte(body, '\n')+1])), nil
}

// A commit body cut at a line boundary parses as a valid shorter commit:
// the engine must notice the size differs from the listing and fail,
// transiently (not as corruption), and read the version once the storage
// behaves.
func TestTruncatedCommitFails(t *testing.T) {
	base := memStore{
		CommitKey(0): []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{}}}
{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
`),
		CommitKey(1): []byte(`{"add":{"path":"b.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
{"remove":{"path":"a.parquet","dataChange":true}}
`),
	}
	ctx := context.Background()
	for _, key := range []string{CommitKey(0), CommitKey(1)} {
		_, err := Open(truncatingStore{Storage: base, key: key}, Options{}).Snapshot(ctx, 1)
		if err == nil {
			t.Fatalf("%s served without its last line: the snapshot was built", key)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrCorruptLog) {
			t.Errorf("%s truncated: err = %v, want a transient io.ErrUnexpectedEOF, not ErrCorruptLog", key, err)
		}
	}
	snap, err := Open(base, Options{}).Snapshot(ctx, 1)
	if err != nil || len(snap.Files()) != 1 || snap.Files()[0].Path != "b.parquet" {
		t.Fatalf("clean read of v1: %v", err)
	}
}

// A checkpoint cut short silently fails the read without being marked bad:
// once the storage behaves, the same Table reads the version from it.
func TestTruncatedCheckpointIsNotRememberedBad(t *testing.T) {
	root := testenv.Fixture(t, "delta-kernel-rs/golden-dv-partitioned-with-checkpoint")
	ctx := context.Background()
	ls, err := dirStore{root}.List(ctx, LogDir, "")
	if err != nil {
		t.Fatal(err)
	}
	var cp LogFile
	for _, o := range ls {
		if f, ok := ParseLogName(filepath.Base(o.Key)); ok && f.Kind == KindCheckpoint {
			cp = f
			cp.ObjectInfo = o
		}
	}
	if cp.Key == "" {
		t.Fatal("fixture has no checkpoint")
	}
	healed := false
	table := Open(truncatingStore{Storage: dirStore{root}, key: cp.Key, off: &healed}, Options{})
	if _, err := table.Snapshot(ctx, cp.Version); !errors.Is(err, io.ErrUnexpectedEOF) && err != nil {
		t.Fatalf("truncated checkpoint: err = %v, want io.ErrUnexpectedEOF or a replay from the commits", err)
	}
	if table.bad.live()[cp.Version] {
		t.Fatalf("checkpoint %d remembered as bad after a transient truncated read", cp.Version)
	}
	healed = true
	if _, err := table.Snapshot(ctx, cp.Version); err != nil {
		t.Fatalf("after the storage healed: %v", err)
	}
}
