package nodes

import (
	"context"
	"encoding/json"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// StatusName is the mount's status file, at the root of the mount.
const StatusName = ".deltafs-status.json"

// MountStatus is the content of the status file: the state of every
// table as of the moment it is read, and what package mount adds (Mount).
type MountStatus struct {
	Time   time.Time     `json:"time"`
	Tables []TableStatus `json:"tables"`
	// Mount is the mount-wide state fs reports (mountpoint, options,
	// cache use); nil when it reports nothing.
	Mount any `json:"mount,omitempty"`
}

// TableStatus is one table of MountStatus. Exactly one of Version and
// Refused is set once the table has been read.
type TableStatus struct {
	Name string `json:"name"`
	// Version is the newest version the mount serves as @latest.
	Version *int64 `json:"version,omitempty"`
	// Timestamp is that version's commit time.
	Timestamp *time.Time `json:"timestamp,omitempty"`
	// Refused says why the table cannot be read (its _deltafs_error.txt).
	Refused string `json:"refused,omitempty"`
	// RefreshError, with Version, says why the last refresh failed:
	// @latest stays at Version, which may be stale (for example the table
	// was deleted or replaced under the mount).
	RefreshError string `json:"refreshError,omitempty"`
	// DataErrors counts the opens and reads of data files that failed
	// (EIO: a missing data or deletion-vector file, unreadable Parquet)
	// since the mount; RecentDataErrors are the newest, oldest first.
	DataErrors       int         `json:"dataErrors"`
	RecentDataErrors []DataError `json:"recentDataErrors,omitempty"`
	// Inbox is the table's inbox; nil on a read-only mount.
	Inbox *InboxState `json:"inbox,omitempty"`
}

// InboxState is the state of one table's inbox/.
type InboxState struct {
	// Writable is false when deltafs cannot append to the table;
	// NotWritable then says why.
	Writable    bool   `json:"writable"`
	NotWritable string `json:"notWritable,omitempty"`
	// Pending are the staged files not yet committed or refused.
	Pending []PendingFile `json:"pending"`
	// Commits and Refusals count the outcomes in _status.jsonl (every
	// one since the mount started).
	Commits  int `json:"commits"`
	Refusals int `json:"refusals"`
	// Refused are the most recent refusals, newest last.
	Refused []StatusEvent `json:"refused"`
}

// PendingFile is a staged file of an inbox.
type PendingFile struct {
	File       string `json:"file"` // path under inbox/
	Bytes      int64  `json:"bytes"`
	Committing bool   `json:"committing"`
	// Temporary: a temporary name or in a scratch directory; only a
	// rename to a final name commits it.
	Temporary bool `json:"temporary,omitempty"`
}

// StatusEvent is one line of a table's inbox/_status.jsonl: the outcome of a staged
// file or a batch (Op "commit", by close() or rename()), a refused
// create, mkdir or rename, a temporary staged at its close (Op "staged":
// how it commits, when it expires), or a stale staged file removed (Op
// "expire").
// A commit that landed has Version; a refusal has Error and the Errno
// close() (or the operation) returned. A file refused by close() is
// removed; one refused by rename() stays under its temporary name From
// (but for EIO: see package inbox).
type StatusEvent struct {
	Time    time.Time `json:"time"`
	Op      string    `json:"op"`
	File    string    `json:"file"`            // path under inbox/
	From    string    `json:"from,omitempty"`  // a rename's temporary path under inbox/
	Files   int       `json:"files,omitempty"` // the Parquet files of a batch's commit
	Bytes   int64     `json:"bytes,omitempty"`
	Version *int64    `json:"version,omitempty"`
	Error   string    `json:"error,omitempty"`
	Errno   string    `json:"errno,omitempty"`
	// Note says, for a staged temporary (Op "staged"), how it commits;
	// Expires is when it is removed uncommitted if left idle.
	Note    string     `json:"note,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
}

// StatusFile is MOUNTPOINT/.deltafs-status.json: a JSON document
// (MountStatus) computed when opened, so that it is never stale.
type StatusFile struct {
	fs.Inode
	ReadOnlyFile

	tables []*TableDir
	extra  func() any
}

var (
	_ = (fs.NodeGetattrer)((*StatusFile)(nil))
	_ = (fs.NodeOpener)((*StatusFile)(nil))
)

// EnableStatus makes the root hold the status file, with extra's result
// (may be nil) as its "mount" member. Call it before mounting.
func (r *RootDir) EnableStatus(extra func() any) {
	r.status = &StatusFile{tables: r.tables, extra: extra}
	r.status.ro = roNode{r.ro.env, &r.status.Inode}
}

// Status returns the mount's status as of now.
func (s *StatusFile) Status(ctx context.Context) MountStatus {
	st := MountStatus{Time: time.Now().UTC(), Tables: make([]TableStatus, 0, len(s.tables))}
	for _, d := range s.tables {
		st.Tables = append(st.Tables, d.status(ctx))
	}
	if s.extra != nil {
		st.Mount = s.extra()
	}
	return st
}

// content returns the status as indented JSON.
func (s *StatusFile) content(ctx context.Context) []byte {
	b, err := json.MarshalIndent(s.Status(ctx), "", "  ")
	if err != nil {
		return []byte(`{"error": "cannot encode the status"}` + "\n")
	}
	return append(b, '\n')
}

// Getattr reports a read-only file of the current size.
func (s *StatusFile) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	acc := s.ro.env.mountAccess()
	FillAttr(&out.Attr, StableIno(kindStatus, "", 0, ""), acc.File(), acc.Owner, int64(len(s.content(ctx))), time.Time{})
	out.SetTimeout(0)
	return 0
}

// Open returns the status as of now (direct I/O: its size changes).
func (s *StatusFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if IsWriteOpen(flags) {
		return nil, 0, s.ro.refuse("open for writing", "")
	}
	return BytesHandle(s.content(ctx)), fuse.FOPEN_DIRECT_IO, 0
}

// kindStatus is the stable-inode kind of the status file.
const kindStatus = "status"

// status returns the table's state without reading storage.
func (d *TableDir) status(ctx context.Context) TableStatus {
	d.mu.Lock()
	snap, refused, stale := d.latest, d.refused, d.stale
	d.mu.Unlock()
	ts := TableStatus{Name: d.name}
	ts.DataErrors, ts.RecentDataErrors = d.errs.snapshot()
	if snap != nil {
		v, t := snap.Version(), snap.Timestamp()
		ts.Version, ts.Timestamp = &v, &t
		if stale != nil {
			ts.RefreshError = stale.Error()
		}
	} else if refused != nil {
		ts.Refused = refused.Error()
	}
	if d.inbox != nil {
		ts.Inbox = d.inbox.State(ctx)
	}
	return ts
}

// Version returns the newest version the directory serves as @latest;
// ok is false while the table has not been read or is refused.
func (d *TableDir) Version() (version int64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.latest == nil {
		return -1, false
	}
	return d.latest.Version(), true
}
