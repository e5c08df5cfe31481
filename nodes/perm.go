package nodes

import (
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/serve"
)

// Perms reports the owners and modes of a local table's sources, for a
// mount that mirrors them (--allow-other): the kernel checks every access
// against what the tree reports (default_permissions), so another user
// reads exactly what that user could read on the source. serve.Table
// implements it. Implementations must be safe for concurrent use.
type Perms interface {
	// TablePerm is the table directory's: its own entries (@vN, the
	// partition directories, _history.jsonl, @latest) take it.
	TablePerm() (serve.Perm, error)
	// LogPerm is _delta_log's: whoever may write it may append through
	// inbox/, which takes it.
	LogPerm() (serve.Perm, error)
	// FilePerm is a data file's.
	FilePerm(f *delta.LiveFile) (serve.Perm, error)
}

// Access is who may use an entry: its permission bits and its owner.
type Access struct {
	Perm  uint32 // permission bits, no file type
	Owner fuse.Owner
}

// Dir is the mode of a read-only directory: write bits cleared.
func (a Access) Dir() uint32 { return syscall.S_IFDIR | a.Perm&0o555 }

// File is the mode of a read-only file: write and execute bits cleared.
func (a Access) File() uint32 { return syscall.S_IFREG | a.Perm&0o444 }

// mountAccess is what entries without a source of their own report: the
// mount's owner (--uid, --gid), readable by all (--umask narrows it).
func (e *Env) mountAccess() Access {
	if e == nil {
		return Access{Perm: 0o555}
	}
	return Access{Perm: 0o555, Owner: fuse.Owner{Uid: e.Opts.UID, Gid: e.Opts.GID}}
}

// inboxAccess is the default of an inbox: writable by the mount's owner.
func (e *Env) inboxAccess() Access {
	a := e.mountAccess()
	a.Perm = 0o755
	return a
}

// mirrored is what a table's Perms said at its last refresh.
type mirrored struct {
	table, log Access
}

// mirror holds a table's Perms and what they said last.
type mirror struct {
	perms Perms                    // nil: the table shows the mount's access
	last  atomic.Pointer[mirrored] // nil until the first refresh
}

// refresh asks the Perms again; an answer that fails keeps the last one
// (a table that vanished is refused by its log's refresh anyway).
func (m *mirror) refresh() {
	if m.perms == nil {
		return
	}
	tp, err := m.perms.TablePerm()
	if err != nil {
		return
	}
	lp, err := m.perms.LogPerm()
	if err != nil {
		lp = tp
	}
	m.last.Store(&mirrored{table: accessOf(tp), log: accessOf(lp)})
}

// get returns what the Perms said last, asking on first use; nil when the
// table is not mirrored or its source cannot be stat'ed.
func (m *mirror) get() *mirrored {
	if m.perms == nil {
		return nil
	}
	if p := m.last.Load(); p != nil {
		return p
	}
	m.refresh()
	return m.last.Load()
}

func accessOf(p serve.Perm) Access {
	return Access{Perm: p.Mode & 0o7777, Owner: fuse.Owner{Uid: p.UID, Gid: p.GID}}
}

// MirrorPerms makes the table's entries show the owners and modes of
// their sources (see Perms) instead of the mount's. Call it before
// mounting.
func (d *TableDir) MirrorPerms(p Perms) { d.perms.perms = p }

// access is who may use the table's own entries.
func (d *TableDir) access() Access {
	if m := d.perms.get(); m != nil {
		return m.table
	}
	return d.env.mountAccess()
}

// InboxAccess is who may use inbox/ and append through it.
func (d *TableDir) InboxAccess() Access {
	if m := d.perms.get(); m != nil {
		return m.log
	}
	return d.env.inboxAccess()
}

// fileAccess is who may read a data file: its stored file's owner and
// mode when mirrored (the table's, read-only, if it cannot be stat'ed:
// its open then fails and says why).
func (d *TableDir) fileAccess(f *delta.LiveFile) Access {
	if d.perms.perms == nil || f == nil {
		return d.access()
	}
	p, err := d.perms.perms.FilePerm(f)
	if err != nil {
		return d.access()
	}
	return accessOf(p)
}
