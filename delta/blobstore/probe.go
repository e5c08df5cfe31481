package blobstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/deltafs/deltafs/delta"
)

// probeDir is where ProbeAtomicPut writes, inside _delta_log/ so that it
// needs no more permission than a commit. Log listings skip directories.
const probeDir = delta.LogDir + "_deltafs_probe/"

// ProbeAtomicPut checks that PutIfAbsent is exclusive on this store: it
// creates a fresh key under _delta_log/_deltafs_probe/, puts it again,
// and deletes it. It returns nil when the second put failed with
// ErrExists; an error wrapping ErrNotAtomic when the store accepted it (an
// S3-compatible server that ignores If-None-Match, for instance); any other
// error when the store could not be written at all (read-only credentials,
// a missing bucket). In every non-nil case the caller must not commit
// through this store unless told there is a single writer.
//
// It catches stores that ignore the condition, not races in stores that
// honour it: the local and remote backends are race-tested separately.
func (s *Store) ProbeAtomicPut(ctx context.Context) error {
	key := probeDir + uuid.NewString()
	body := []byte(`{"deltafs":"put-if-absent probe"}` + "\n")
	if err := s.PutIfAbsent(ctx, key, body); err != nil {
		return fmt.Errorf("probe put-if-absent: %w", err)
	}
	defer s.removeProbe(ctx, key)
	err := s.PutIfAbsent(ctx, key, body)
	switch {
	case err == nil:
		return fmt.Errorf("probe %s: %w", s.where.at(key), ErrNotAtomic)
	case errors.Is(err, delta.ErrExists):
		return nil
	default:
		return fmt.Errorf("probe put-if-absent: %w", err)
	}
}

// removeProbe deletes the probe object, and on a local root its directory
// when empty (another mount may be probing at the same time).
func (s *Store) removeProbe(ctx context.Context, key string) {
	_ = s.Delete(ctx, key)
	if s.local != "" {
		_ = os.Remove(filepath.Join(s.local, filepath.FromSlash(probeDir)))
	}
}
