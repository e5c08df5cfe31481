package delta

// Writing a checkpoint: the snapshot's state encoded by the checkpoint
// codec and streamed to one Put, then _last_checkpoint moved forward.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/deltafs/deltafs/delta/checkpoint"
)

// WriteCheckpoint writes a single-file checkpoint of snap at
// _delta_log/<version>.checkpoint.parquet, then points _last_checkpoint at
// it unless the hint already names a newer version.
//
// The checkpoint holds the snapshot's state encoded by checkpoint.Encode:
// a Spark V1 checkpoint, or a classic-named V2-spec one when the table
// supports the v2Checkpoint feature.
//
// It does not check that the table may be written (writer features): that
// is the caller's decision. Tombstones are not expired by retention.
//
// The file is streamed to one Put as it is encoded, in row groups of at
// most checkpoint.RowGroupRows rows: memory does not grow with the table
// beyond the snapshot itself. Checkpoints may be overwritten, since every
// checkpoint of a version is equivalent; a Put that fails midway stores
// nothing (a local store writes a temporary file and renames it, an object
// store aborts the upload). An error leaves the table's commits untouched;
// a failure after the checkpoint is stored only leaves _last_checkpoint
// stale, which readers tolerate.
func WriteCheckpoint(ctx context.Context, s Storage, snap *Snapshot) error {
	v := snap.Version()
	rows, size, err := putCheckpoint(ctx, s, snap)
	if err != nil {
		return fmt.Errorf("write checkpoint %d of %s: %w", v, s, err)
	}
	adds := int64(len(snap.Files()))
	lc := LastCheckpoint{Version: v, Size: rows, SizeInBytes: &size, NumOfAddFiles: &adds}
	if err := writeLastCheckpoint(ctx, s, lc); err != nil {
		return fmt.Errorf("checkpoint %d of %s written, but: %w", v, s, err)
	}
	return nil
}

// errPutStopped is what the encoder of a checkpoint gets when the Put
// reading it returned before the end of the body.
var errPutStopped = errors.New("the store stopped reading the checkpoint before its end")

// putCheckpoint encodes snap's checkpoint into a pipe that one Put reads,
// and returns its rows (actions) and bytes. An encoding error is
// returned as such (the Put sees it as a failed read and stores nothing);
// a Put that returns, even with nil, before reading the whole body fails.
func putCheckpoint(ctx context.Context, s Storage, snap *Snapshot) (rows, size int64, err error) {
	pr, pw := io.Pipe()
	cw := &countingWriter{w: pw}
	done := make(chan error, 1)
	go func() {
		n, err := checkpoint.Encode(cw, snap.checkpointState())
		rows = n
		pw.CloseWithError(err) // nil: the reader gets EOF
		done <- err
	}()
	putErr := s.Put(ctx, CheckpointKey(snap.Version()), pr)
	pr.CloseWithError(errPutStopped) // unblocks the encoder if Put stopped reading
	encErr := <-done
	switch {
	case encErr != nil && !errors.Is(encErr, errPutStopped):
		return 0, 0, encErr
	case putErr != nil:
		return 0, 0, putErr
	case encErr != nil:
		return 0, 0, encErr
	}
	return rows, cw.n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// checkpointState is what a checkpoint of s records.
func (s *Snapshot) checkpointState() *checkpoint.State {
	st := s.state
	return &checkpoint.State{
		Version: s.version, Protocol: st.protocol, Metadata: st.metadata,
		Txns: st.txns, Domains: st.domains, Files: st.files, Tombstones: st.tombstones,
	}
}

// writeLastCheckpoint stores lc (with its checksum) as _last_checkpoint,
// unless the current hint is valid and names a newer version: a slow
// writer must not move the hint backwards.
func writeLastCheckpoint(ctx context.Context, s Storage, lc LastCheckpoint) error {
	cur, ok, err := readLastCheckpoint(ctx, s)
	if err != nil && !errors.Is(err, ErrNotExist) {
		return fmt.Errorf("read %s: %w", LastCheckpointKey, err)
	}
	if ok && cur.Version > lc.Version {
		return nil
	}
	data, err := json.Marshal(lc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", LastCheckpointKey, err)
	}
	if lc.Checksum, err = lastCheckpointChecksum(data); err != nil {
		return fmt.Errorf("checksum %s: %w", LastCheckpointKey, err)
	}
	if data, err = json.Marshal(lc); err != nil {
		return fmt.Errorf("encode %s: %w", LastCheckpointKey, err)
	}
	if err := s.Put(ctx, LastCheckpointKey, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("write %s: %w", LastCheckpointKey, err)
	}
	return nil
}
