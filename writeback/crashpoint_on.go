//go:build deltafs_crashpoints

package writeback

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

// CrashPointsCompiled says whether this build has the crash-point hook.
const CrashPointsCompiled = true

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
