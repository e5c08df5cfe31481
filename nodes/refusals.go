package nodes

import (
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

// refusalInterval is the least time between two log lines about writes
// refused with EROFS: a `cp -r` into a snapshot is one line, not one per
// file.
const refusalInterval = time.Minute

// refusalLog rate-limits the log lines of writes refused with EROFS
// (snapshots are immutable). The first refusal is logged at once; the
// ones within refusalInterval after a line are only counted, and the
// next line says how many there were.
type refusalLog struct {
	mu         sync.Mutex
	next       time.Time // guarded by mu: when the next line may be logged
	suppressed int       // guarded by mu: refusals not logged since the last line
}

// take reports whether a refusal is to be logged now and, if so, how many
// went unlogged before it.
func (r *refusalLog) take(now time.Time) (log bool, suppressed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Before(r.next) {
		r.suppressed++
		return false, 0
	}
	suppressed, r.suppressed = r.suppressed, 0
	r.next = now.Add(refusalInterval)
	return true, suppressed
}

// roNode is what a read-only node needs to log the writes it refuses:
// the mount's Env and its own Inode (its path names the table and the
// version). The zero value refuses without logging.
type roNode struct {
	env *Env
	in  *fs.Inode
}

// refuse logs (rate-limited) a write refused on the node, or on its
// child name when not "", and returns EROFS.
func (r roNode) refuse(op, name string) syscall.Errno {
	if r.env == nil || r.in == nil {
		return errReadOnly
	}
	ok, suppressed := r.env.refusals.take(time.Now())
	if !ok {
		return errReadOnly
	}
	p := r.in.Path(nil)
	if name != "" {
		p = path.Join(p, name)
	}
	table, version := tableVersionOf(p)
	attrs := []any{"op", op, "table", table, "version", version, "path", p, "errno", "EROFS"}
	if suppressed > 0 {
		attrs = append(attrs, "refused_since_last_line", suppressed)
	}
	r.env.log.Warn("deltafs: write refused: snapshots are read-only (further refusals logged at most once a minute)", attrs...)
	return errReadOnly
}

// tableVersionOf returns the table (the first element; "" for the root)
// and the version (an @vN element; "" outside a snapshot) of a path in
// the mount.
func tableVersionOf(p string) (table, version string) {
	elems := strings.Split(p, "/")
	table = elems[0]
	for _, e := range elems[1:] {
		if n, ok := strings.CutPrefix(e, "@v"); ok {
			if _, err := strconv.ParseInt(n, 10, 64); err == nil {
				return table, n
			}
		}
	}
	return table, ""
}
