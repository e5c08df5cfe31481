//go:build !deltafs_crashpoints

package writeback

import (
	"io"

	"github.com/deltafs/deltafs/delta"
)

// CrashPointsCompiled says whether this build has the crash-point hook
// (build tag deltafs_crashpoints); without it every crash point is a no-op.
const CrashPointsCompiled = false

func crashPoint(string) {}

func crashReader(r io.Reader, _ int64) io.Reader { return r }

func crashStore(s delta.Storage) delta.Storage { return s }
