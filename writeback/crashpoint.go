package writeback

// A test hook: crash the process at a named point of the append path, so
// that crash-safety tests (integration/crash_test.go) can SIGKILL a mount
// or `deltafs append` exactly between two steps. It is inert unless the
// environment variable is set when the process starts; production code
// never sets it.

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/deltafs/deltafs/delta"
)

// EnvCrashPoint names the environment variable of the crash-point test
// hook: "NAME" or "NAME@K" makes the process SIGKILL itself the K-th time
// (default 1) it reaches the point NAME of an append, one of:
//
//   - "staged": Append was called with staged files; nothing is written.
//   - "uploading": half way through storing a data file (the store has
//     read part of its bytes).
//   - "uploaded": every data file is stored; no commit is written.
//   - "committing": the commit is built and about to be put.
//   - "committed": the commit exists; the caller is not yet told.
//   - "checkpointing": the checkpoint file is stored, _last_checkpoint is
//     not yet updated.
//
// It is a test hook only: the value is read once, at start-up.
const EnvCrashPoint = "DELTAFS_CRASHPOINT"

// Crash point names (see EnvCrashPoint).
const (
	CrashStaged        = "staged"
	CrashUploading     = "uploading"
	CrashUploaded      = "uploaded"
	CrashCommitting    = "committing"
	CrashCommitted     = "committed"
	CrashCheckpointing = "checkpointing"
)

// crash is the armed crash point; its zero value (no env var) is inert.
var crash = parseCrashPoint(os.Getenv(EnvCrashPoint))

// crashPointSpec is a parsed EnvCrashPoint value.
type crashPointSpec struct {
	name string
	nth  int64        // crash on this hit (1-based)
	hits atomic.Int64 // times name was reached
}

// parseCrashPoint parses "NAME" or "NAME@K"; an empty or malformed value
// arms nothing.
func parseCrashPoint(v string) *crashPointSpec {
	name, k, hasK := strings.Cut(v, "@")
	spec := &crashPointSpec{name: name, nth: 1}
	if hasK {
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil || n < 1 {
			return &crashPointSpec{}
		}
		spec.nth = n
	}
	return spec
}

// armed reports whether the point name is the armed one.
func (s *crashPointSpec) armed(name string) bool { return s.name != "" && s.name == name }

// crashPoint kills the process with SIGKILL when name is the armed point
// and this is the hit it waits for. It costs one string comparison
// otherwise.
func crashPoint(name string) {
	if !crash.armed(name) || crash.hits.Add(1) != crash.nth {
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not deliverable late, but never run on
}

// crashReader wraps an upload body when "uploading" is armed: it crashes
// (see crashPoint) after passing on the first half of size bytes.
func crashReader(r io.Reader, size int64) io.Reader {
	if !crash.armed(CrashUploading) {
		return r
	}
	return &halfwayReader{r: r, at: size / 2}
}

type halfwayReader struct {
	r      io.Reader
	at     int64
	done   int64
	passed bool // the crash point was reached (once per upload)
}

func (h *halfwayReader) Read(p []byte) (int, error) {
	if h.done >= h.at && !h.passed {
		h.passed = true
		crashPoint(CrashUploading)
	}
	if rest := h.at - h.done; rest > 0 && int64(len(p)) > rest {
		p = p[:rest] // stop exactly half way, once
	}
	n, err := h.r.Read(p)
	h.done += int64(n)
	return n, err
}

// crashStore wraps the storage a checkpoint is written to when
// "checkpointing" is armed: it crashes before storing _last_checkpoint.
func crashStore(s delta.Storage) delta.Storage {
	if !crash.armed(CrashCheckpointing) {
		return s
	}
	return checkpointCrasher{s}
}

type checkpointCrasher struct{ delta.Storage }

func (c checkpointCrasher) Put(ctx context.Context, key string, r io.Reader) error {
	if key == delta.LastCheckpointKey {
		crashPoint(CrashCheckpointing)
	}
	return c.Storage.Put(ctx, key, r)
}
