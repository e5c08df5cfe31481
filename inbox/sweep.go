package inbox

// Sweep: staged files and scratch directories idle past Options.StaleAfter
// removed, never committed.

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

// Sweep removes what the inbox holds that will not be committed:
// staged files idle for Options.StaleAfter (a temporary name never
// renamed, an empty file never written; not while open for writing) and
// scratch directories left empty that long. Nothing is ever committed by
// it; each removal is an "expire" line of _status.jsonl. fs calls it from
// its refresh loop; it walks the inbox at most every tenth of the limit
// (at most every minute), and not while a batch commits.
func (in *Inbox) Sweep(now time.Time) {
	if in.staleAfter <= 0 {
		return
	}
	in.mu.Lock()
	root := in.root
	if root == nil || len(in.batches) > 0 || now.Sub(in.lastSweep) < min(in.staleAfter/10, time.Minute) {
		in.mu.Unlock()
		return
	}
	in.lastSweep = now
	in.mu.Unlock()
	in.sweep(root, now)
}

// sweep removes the stale entries under n and reports whether n is left
// empty.
func (in *Inbox) sweep(n *fs.Inode, now time.Time) bool {
	children := n.Children()
	left := len(children)
	for name, ch := range children {
		switch op := ch.Operations().(type) {
		case *Dir:
			if in.sweep(ch, now) && op.scratch && now.Sub(op.lastActive()) >= in.staleAfter {
				n.RmChild(name)
				ch.ForgetPersistent()
				n.NotifyEntry(name)
				left--
			}
		case *File:
			rel := op.rel()
			if size, ok := op.expire(now, in.staleAfter); ok {
				in.drop(op, true)
				in.status.add(StatusEvent{Op: "expire", File: rel, Bytes: size})
				in.tree.Logger().Info("deltafs: inbox: stale staged file removed, not committed", "table", in.name, "file", rel, "bytes", size, "idle", in.staleAfter)
				left--
			}
		}
	}
	return left == 0
}

// expire decides a staged file idle for after (not open for writing) as
// removed, returning its size.
func (f *File) expire(now time.Time, after time.Duration) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != stateStaged || f.writer != nil || now.Sub(f.active) < after {
		return 0, false
	}
	f.state, f.errno = stateDone, 0
	return f.staged, true
}

// touch records activity in a scratch directory (an entry made or moved
// in), which keeps it from being swept while empty.
func (d *Dir) touch() { d.active.Store(time.Now().UnixNano()) }

// lastActive is when the directory was made or last had an entry added.
func (d *Dir) lastActive() time.Time { return time.Unix(0, d.active.Load()) }
