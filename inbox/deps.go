// Package inbox is a table's inbox/: files written into it are staged on
// local disk, checked and appended to the table as one new version each
// when closed (or renamed to a final name); a directory renamed in is one
// version for all its files; every outcome is a line of _status.jsonl.
//
// It is a part of the tree that package nodes serves: it builds its
// nodes with nodes' Env, attributes, inode numbers and errno choice, and
// hangs in a table directory through nodes.TableDir.SetInbox. It reaches
// commits only through the Writer interface declared here, which the
// mount implements; it knows nothing of blob keys or the Delta log.
package inbox

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/nodes"
)

// Options are the settings every inbox of one mount shares.
type Options struct {
	// Staging, when set, bounds the local disk taken by staged files:
	// each write that grows a staged file reserves its growth, and a
	// file's bytes are given back when it leaves the inbox.
	Staging Budget
	// StaleAfter: a staged file not committed (a temporary name, or
	// empty) and not written, truncated or renamed for this long, with no
	// open write handle, is removed without a commit, and so is an empty
	// scratch directory (Inbox.Sweep). Zero means DefaultStaleAfter;
	// negative never.
	StaleAfter time.Duration
	// CommitTimeout caps the wait of a close() or rename() for its commit
	// (zero means DefaultCommitTimeout): past it the answer is EIO, the
	// reason in _status.jsonl (the outcome may be unknown).
	CommitTimeout time.Duration
}

// DefaultStaleAfter is the default Options.StaleAfter.
const DefaultStaleAfter = time.Hour

// DefaultCommitTimeout is the default Options.CommitTimeout.
const DefaultCommitTimeout = 5 * time.Minute

// Budget is a bound on local disk bytes shared with others (the mount
// wires the disk cache's, so staged files and cached files share
// --cache-size). Implementations must be safe for concurrent use.
type Budget interface {
	// Reserve takes n bytes of the budget, or returns an error (wrapping
	// syscall.ENOSPC) saying why it cannot.
	Reserve(n int64) error
	// Release gives back n bytes taken by Reserve.
	Release(n int64)
}

// Env is what the inboxes of one mount share. Build it with NewEnv; its
// fields must not change once the mount is up.
type Env struct {
	tree *nodes.Env
	opts Options
	// mountID is the kernel's mnt_id of the mount (0 until SetMountID):
	// with it, a descriptor of another mount whose inode number matches
	// is not taken for one of ours (see holdsDescriptor).
	mountID atomic.Uint64
	// fdinfo says how a dup of a write handle is recognized (probeFdinfo,
	// at NewEnv; see holdsWriteDescriptor).
	fdinfo fdinfoIno
}

// NewEnv returns the Env of the inboxes of the tree whose Env is tree,
// with the defaults of opts filled in.
func NewEnv(tree *nodes.Env, opts Options) *Env {
	if opts.CommitTimeout <= 0 {
		opts.CommitTimeout = DefaultCommitTimeout
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	return &Env{tree: tree, opts: opts, fdinfo: probeFdinfo()}
}

// FdinfoHasIno reports whether this kernel's /proc/PID/fdinfo names each
// descriptor's inode (Linux >= 5.14). Without it, the inbox recognizes a
// dup of a write descriptor by the path the kernel shows for it
// (/proc/PID/fd), which a process in another mount namespace or chroot
// may see otherwise: its dups are then not seen, and the first close of
// the opener commits the file and returns the outcome (later writes
// through a dup fail with EROFS). That never acknowledges a file before
// it is committed; the other choice (waiting for the last release) would.
func (e *Env) FdinfoHasIno() bool { return e.fdinfo == fdinfoHasIno }

// SetMountID records the kernel's mnt_id of the mount, once it is up.
func (e *Env) SetMountID(id uint64) { e.mountID.Store(id) }

// reserveStaging takes n bytes of the staging budget, if there is one.
func (e *Env) reserveStaging(n int64) error {
	if n <= 0 || e.opts.Staging == nil {
		return nil
	}
	return e.opts.Staging.Reserve(n)
}

// releaseStaging gives back n bytes taken by reserveStaging.
func (e *Env) releaseStaging(n int64) {
	if n > 0 && e.opts.Staging != nil {
		e.opts.Staging.Release(n)
	}
}

// StagedFile is a complete local file the inbox asks a Writer to append.
type StagedFile struct {
	// LocalPath is the staged file on local disk; the Writer only reads it.
	LocalPath string
	// Name is the name the user gave the file (recorded in commitInfo).
	Name string
	// PartitionValues maps each partition column (logical name) to its
	// serialized value, nil for null; empty for unpartitioned tables.
	PartitionValues map[string]*string
}

// Writer appends files to one table; the mount wires writeback.Committer into
// it. Implementations must be safe for concurrent use.
type Writer interface {
	// Writable returns nil when files can be appended, else why not (an
	// error wrapping nodes.ErrNotWritable, or a storage error).
	Writable(ctx context.Context) error
	// PartitionColumns returns the partition columns in order, with their
	// logical names and types.
	PartitionColumns(ctx context.Context) ([]*delta.StructField, error)
	// Append validates the files and commits them all as ONE new version
	// of the table (a staged file, or every file of a batch directory),
	// returning that version once its commit exists. A refused file is an
	// error wrapping nodes.ErrInvalidFile that names every bad file, an
	// unwritable table one wrapping nodes.ErrNotWritable; anything else is
	// storage trouble. Nothing is committed on error. The inbox calls it
	// at most once per staged file and outcome: a refused file is only
	// handed again after a new rename.
	Append(ctx context.Context, files []StagedFile) (version int64, err error)
	// Check validates the files as Append would, writing nothing: nil, or
	// an error wrapping nodes.ErrInvalidFile that names every bad file (or
	// nodes.ErrNotWritable, or storage trouble). The inbox uses it to name all
	// the bad files of a batch that is refused for its layout too.
	Check(ctx context.Context, files []StagedFile) error
}
