package inbox

// Inbox: one table's inbox/, its names, and how its outcomes are committed
// through the Writer.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/nodes"
)

// Names in an inbox directory.
const (
	// StatusName is the inbox's log of outcomes: one JSON object per
	// commit or refusal, oldest first (see StatusEvent).
	StatusName = "_status.jsonl"
	// maxInboxName bounds the length of a staged file's name, in bytes.
	maxInboxName = 200
)

// inboxTimeout is the kernel timeout of staged files' entries and
// attributes: as short as go-fuse allows (zero means "the mount default"),
// so that ls shows the size being written and a committed file vanishes.
const inboxTimeout = time.Nanosecond

// inbox is the state one table's inbox shares between its directories
// and staged files. Files written into MOUNTPOINT/<table>/inbox/ are
// staged under staging (never in the table) and handed to writer when
// closed; the outcome lands in status.
//
// Lock order: File.mu before inbox.mu; neither is held across a
// Writer call.
type Inbox struct {
	dir     *nodes.TableDir
	name    string     // the table's
	tree    *nodes.Env // the tree's: errno choice, logs, timeouts
	env     *Env
	writer  Writer
	staging string
	status  *statusLog

	mu       sync.Mutex
	root     *fs.Inode // guarded by mu: the inbox directory, nil until looked up
	checked  time.Time // guarded by mu: when writeErr was last asked
	writeErr error     // guarded by mu: the last answer of writer.Writable
	// batches are the scratch directories being committed (batch.go).
	batches map[*Dir]bool // guarded by mu
	// files are the staged files not yet dropped, registered by Create
	// before go-fuse puts them in the tree: a batch that starts between
	// the two finds them here (see admit and batch.lockOut).
	files map[*File]struct{} // guarded by mu
	// staleAfter: staged files idle this long are removed (SweepInbox); <= 0 never.
	staleAfter time.Duration
	lastSweep  time.Time // guarded by mu
	// lastRefusal is the last refused rename, so that the same rename
	// refused again at once (mv retries a refused renameat2 without its
	// flags) is one line and one count (rename.go).
	lastRefusal renameRefusal // guarded by mu
}

// Enable gives the table directory d an inbox/ whose files are staged in
// stagingDir (which must exist and belong to this table alone) and
// appended by w, and returns it. Call it before the mount serves
// requests; a table directory without it (a --read-only mount) has no
// inbox.
func Enable(e *Env, d *nodes.TableDir, w Writer, stagingDir string) *Inbox {
	in := &Inbox{dir: d, name: d.Name(), tree: e.tree, env: e, writer: w, staging: stagingDir,
		status: newStatusLog(statusPath(stagingDir)), batches: map[*Dir]bool{},
		files: map[*File]struct{}{}, staleAfter: e.opts.StaleAfter}
	d.SetInbox(in)
	return in
}

// statusPath is where the status lines of the inbox staged in
// stagingDir are kept: beside it, so that they never mix with staged
// files and go with the mount's staging (see statusLog).
func statusPath(stagingDir string) string {
	return filepath.Clean(stagingDir) + ".status.jsonl"
}

// Node returns the inbox directory, the same inode on every lookup: it
// is persistent because its children (staged files, partition dirs) live
// only in the tree.
func (in *Inbox) Node(ctx context.Context, out *fuse.EntryOut) *fs.Inode {
	in.mu.Lock()
	if in.root == nil {
		root := &Dir{in: in}
		in.root = in.dir.NewPersistentInode(ctx, root, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: root.ino()})
	}
	n := in.root
	in.mu.Unlock()
	n.Operations().(*Dir).fill(ctx, &out.Attr)
	out.SetEntryTimeout(in.tree.Opts.ShortTimeout)
	out.SetAttrTimeout(in.tree.Opts.ShortTimeout)
	return n
}

// writable returns nil when files can be appended now, else why not. The
// answer is kept for the short timeout: Getattr asks it often.
func (in *Inbox) writable(ctx context.Context) error {
	in.mu.Lock()
	if !in.checked.IsZero() && time.Since(in.checked) < in.tree.Opts.ShortTimeout {
		err := in.writeErr
		in.mu.Unlock()
		return err
	}
	in.mu.Unlock()
	err := in.writer.Writable(ctx)
	if err != nil && nodes.Cancelled(err) {
		return err
	}
	in.mu.Lock()
	in.checked, in.writeErr = time.Now(), err
	in.mu.Unlock()
	return err
}

// refuse records a refused operation on rel (a path under inbox/) in the
// status file and returns its errno.
func (in *Inbox) refuse(op, rel string, err error) syscall.Errno {
	if op == "commit" {
		err = nodes.CommitError(err)
	}
	errno := in.tree.InboxErrno(op, err, "table", in.name, "file", rel)
	if errno != syscall.EINTR {
		in.status.add(StatusEvent{Op: op, File: rel, Error: err.Error(), Errno: nodes.ErrnoName(errno)})
	}
	return errno
}

// checkFileName returns an error wrapping nodes.ErrInvalidFile when name cannot
// be a staged file or directory: the inbox's own file names are reserved,
// control characters, invalid UTF-8 and overlong names are refused.
// (Temporary names, "." or "_" first, are staged: see isTemporaryName.)
func checkFileName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("%w: empty name", nodes.ErrInvalidFile)
	case name == StatusName || name == nodes.ReasonName:
		return fmt.Errorf("%w: name %q is reserved", nodes.ErrInvalidFile, name)
	case len(name) > maxInboxName:
		return fmt.Errorf("%w: name of %d bytes, at most %d", nodes.ErrInvalidFile, len(name), maxInboxName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: name %q is not UTF-8", nodes.ErrInvalidFile, name)
	case strings.ContainsFunc(name, isControl):
		return fmt.Errorf("%w: name %q holds a control character", nodes.ErrInvalidFile, name)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkCreate returns why a file cannot be created in d, or nil: the
// table must be writable and d must be a leaf partition directory, unless
// the file is temporary (anywhere: where it is renamed to decides).
func (in *Inbox) checkCreate(ctx context.Context, d *Dir, name string) error {
	if err := in.writable(ctx); err != nil {
		return err
	}
	if err := checkFileName(name); err != nil {
		return err
	}
	if d.scratch || isTemporaryName(name) {
		return nil
	}
	return in.checkLeaf(ctx, d)
}

// checkLeaf returns why d cannot hold files to commit, or nil: it must be
// a leaf partition directory (the root of an unpartitioned table).
func (in *Inbox) checkLeaf(ctx context.Context, d *Dir) error {
	cols, err := in.writer.PartitionColumns(ctx)
	if err != nil {
		return err
	}
	if len(d.parts) < len(cols) {
		return fmt.Errorf("%w: table %s is partitioned: put files in %s", nodes.ErrInvalidFile, in.name, partitionHint(cols))
	}
	return nil
}

// partitionHint names where files of a table partitioned by cols go.
func partitionHint(cols []*delta.StructField) string {
	var b strings.Builder
	b.WriteString(nodes.InboxName + "/")
	for _, c := range cols {
		b.WriteString(delta.EscapeHivePathName(c.Name) + "=<value>/")
	}
	return b.String()
}

// partitionDir checks a directory name created at depth len(parent) of
// the inbox: it must be "col=value" for the next partition column, with
// a value of the column's type. It returns the column's logical name and
// the value as the log serializes it (nil for null).
func (in *Inbox) partitionDir(ctx context.Context, depth int, name string) (string, *string, error) {
	cols, err := in.writer.PartitionColumns(ctx)
	if err != nil {
		return "", nil, err
	}
	if depth >= len(cols) {
		return "", nil, fmt.Errorf("%w: %q: no partition column left at this level (table %s: %s)", nodes.ErrInvalidFile, name, in.name, partitionHint(cols))
	}
	want := cols[depth]
	col, val, err := delta.ParseHiveSegment(name)
	if c, _, _ := strings.Cut(name, "="); err != nil && strings.EqualFold(c, delta.EscapeHivePathName(want.Name)) {
		// The right column, a value that does not decode (a bad escape, not UTF-8): say why.
		return "", nil, fmt.Errorf("%w: %q: %w (table %s)", nodes.ErrInvalidFile, name, err, in.name)
	}
	if err != nil || !strings.EqualFold(col, want.Name) || strings.ContainsFunc(name, isControl) {
		return "", nil, fmt.Errorf("%w: %q: want %s=<value> here (table %s: %s)", nodes.ErrInvalidFile, name, want.Name, in.name, partitionHint(cols))
	}
	if val != nil && (*val == "." || strings.HasSuffix(*val, "..")) {
		// A data file's path would hold "./" or "../": object stores and
		// local storage rewrite such keys (or resolve them elsewhere), so
		// the file would not be where the log says.
		return "", nil, fmt.Errorf("%w: %q: a partition value may not be \".\" or end in \"..\" (it would not be stored where the log names it)", nodes.ErrInvalidFile, name)
	}
	return canonicalPartition(want, val)
}

// canonicalPartition returns a partition value of column c as the log
// writes it.
func canonicalPartition(c *delta.StructField, val *string) (string, *string, error) {
	s, err := delta.CanonicalPartitionValue(c.Type, val)
	if err != nil {
		return "", nil, fmt.Errorf("%w: partition %s: %w", nodes.ErrInvalidFile, c.Name, err)
	}
	if s == nil && !c.Nullable {
		return "", nil, fmt.Errorf("%w: partition column %s is not nullable", nodes.ErrInvalidFile, c.Name)
	}
	return c.Name, s, nil
}

// admit registers the new staged file f of d, unless d is in a batch
// being committed (EBUSY: batches lock out creates while they commit, so
// that no file lands in a directory the batch is about to remove) or in
// one already committed (ENOENT).
func (in *Inbox) admit(f *File, d *Dir) syscall.Errno {
	in.mu.Lock()
	defer in.mu.Unlock()
	if errno := in.lockedOutLocked(d); errno != 0 {
		return errno
	}
	in.files[f] = struct{}{}
	return 0
}

// forget takes f out of the registry of staged files.
func (in *Inbox) forget(f *File) {
	in.mu.Lock()
	delete(in.files, f)
	in.mu.Unlock()
}

// drop removes f's staging file, gives its bytes back to the staging
// budget and takes f out of the inbox (telling the kernel when notify:
// not from a RENAME handler, see detachQuiet).
func (in *Inbox) drop(f *File, notify bool) {
	if err := os.Remove(f.path); err != nil && !os.IsNotExist(err) {
		in.tree.Logger().Warn("deltafs: remove staged file", "table", in.name, "file", f.rel(), "err", err)
	}
	f.releaseStaged()
	in.forget(f)
	if notify {
		f.detach()
	} else {
		f.detachQuiet()
	}
}

// commit appends the staged file f (size bytes, shown as rel) and settles
// its fate: on success the version exists and @latest shows it before
// commit returns; either way the staged copy is removed, f leaves the
// inbox and the outcome is recorded in the status file. The append runs
// without the caller's cancellation: an interrupted close() must not
// abandon a commit half way.
func (in *Inbox) commit(ctx context.Context, f *File, rel string, sf StagedFile, size int64) syscall.Errno {
	ctx, cancel := in.commitContext(ctx)
	defer cancel()
	start := time.Now()
	v, err := in.writer.Append(ctx, []StagedFile{sf})
	in.drop(f, true)
	if err != nil {
		return in.refuse("commit", rel, err)
	}
	in.published(ctx, StatusEvent{Op: "commit", File: rel, Bytes: size, Version: &v}, start)
	return 0
}

// commitContext is the context of a commit a close() or rename() waits
// for: the caller's interruption does not abandon it half way (a signal
// must not leave the outcome unknown), but it ends after
// Options.CommitTimeout: a dead store never hangs the caller. Cancel it
// when the commit returns.
func (in *Inbox) commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), in.env.opts.CommitTimeout)
}

// published records the commit e (of a file or a batch), and makes
// @latest show it before the close() or rename() returns.
func (in *Inbox) published(ctx context.Context, e StatusEvent, start time.Time) {
	in.status.add(e)
	in.tree.Logger().Info("deltafs: inbox commit", "table", in.name, "file", e.File, "version", *e.Version, "files", max(e.Files, 1), "bytes", e.Bytes, "took", time.Since(start))
	if _, err := in.dir.Refresh(ctx); err != nil {
		in.tree.Logger().Warn("deltafs: refresh after commit", "table", in.name, "version", *e.Version, "err", err)
	}
	in.dir.Invalidate()
}
