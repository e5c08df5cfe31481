package mount

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/inbox"
	"github.com/deltafs/deltafs/nodes"
	"github.com/deltafs/deltafs/pqfile"
	"github.com/deltafs/deltafs/writeback"
)

// stagingDirName is the directory under the cache dir holding each
// mount's staged inbox files, in mount-<pid>-* directories removed at
// unmount (and, after a crash, by the next mount once the pid is gone).
const stagingDirName = "inbox-staging"

// enableInboxes gives every table directory an inbox whose files are
// staged under a fresh directory of the cache dir and committed by a
// writeback.Committer. It returns the mount's staging directory.
func (s *Server) enableInboxes() (string, error) {
	root := filepath.Join(s.cfg.CacheDir, stagingDirName)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("inbox staging: %w", err)
	}
	removeStaleStaging(root)
	dir, err := os.MkdirTemp(root, "mount-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("inbox staging: %w", err)
	}
	// Re-encoded copies of files widened to the table's types go beside
	// the staged files, so that a crash leaves none outside the staging
	// directory that the next mount removes.
	widenDir := filepath.Join(dir, "widened")
	if err := os.Mkdir(widenDir, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("inbox staging: %w", err)
	}
	budget := pqfile.NewBudget(s.cfg.ValidationMemory) // one for all tables
	s.inboxEnv = inbox.NewEnv(s.env, inbox.Options{Staging: stagingBudget{s.cache},
		StaleAfter: s.cfg.InboxStaleAfter, CommitTimeout: s.cfg.CommitTimeout})
	for i, d := range s.dirs {
		tdir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(tdir, 0o700); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("inbox staging: %w", err)
		}
		c := writeback.New(s.tables[i].table, s.stats.committerHooks(s.tables[i].name,
			writeback.Options{EngineInfo: s.cfg.EngineInfo, Logger: s.cfg.Logger, TempDir: widenDir, CommitTimeout: s.cfg.CommitTimeout, ValidationBudget: budget}))
		s.committers = append(s.committers, c)
		s.inboxes = append(s.inboxes, inbox.Enable(s.inboxEnv, d, inboxWriter{c: c, refuse: s.probeAtomicPut(s.tables[i])}, tdir))
	}
	return dir, nil
}

// removeStaleStaging removes the staging directories of mounts whose
// process is gone: what a crashed mount had staged was never committed.
func removeStaleStaging(root string) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "mount-")
		pidText, _, ok2 := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || !ok2 || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(root, e.Name()))
	}
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// probeAtomicPut checks, for a table in object storage, that its store
// honours put-if-absent: commits are only safe there. A store that fails
// the probe gets an inbox that refuses files with the reason (unless
// cfg.SingleWriter). Local tables commit with link(2) and need no probe.
func (s *Server) probeAtomicPut(t *mountedTable) error {
	if err := t.store.CheckRoot(); err != nil {
		// Every object written would land under another name.
		return fmt.Errorf("%w: %w", writeback.ErrNotWritable, err)
	}
	if t.store.LocalDir() != "" || s.cfg.SingleWriter {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := t.store.ProbeAtomicPut(ctx)
	if err == nil {
		return nil
	}
	s.cfg.Logger.Warn("deltafs: table mounted without appends: its store cannot guarantee atomic commits",
		"table", t.name, "location", t.store.String(), "err", err)
	return fmt.Errorf("%w: %s cannot guarantee atomic put-if-absent, so appends could overwrite each other (%v); mount with --single-writer if this mount is the only writer",
		writeback.ErrNotWritable, t.store.String(), err)
}

// inboxWriter is a writeback.Committer as the inbox sees it: the
// committer's errors get the nodes sentinels the errno mapping knows.
// refuse, when set, is why the table takes no appends in this mount.
type inboxWriter struct {
	c      *writeback.Committer
	refuse error
}

var _ inbox.Writer = inboxWriter{}

func (w inboxWriter) Writable(ctx context.Context) error {
	if w.refuse != nil {
		return classify(w.refuse)
	}
	return classify(w.c.Writable(ctx))
}

func (w inboxWriter) PartitionColumns(ctx context.Context) ([]*delta.StructField, error) {
	return w.c.PartitionColumns(ctx)
}

func (w inboxWriter) Append(ctx context.Context, files []inbox.StagedFile) (int64, error) {
	if w.refuse != nil {
		return 0, classify(w.refuse)
	}
	wf := make([]writeback.File, len(files))
	for i, f := range files {
		wf[i] = writeback.File{LocalPath: f.LocalPath, Name: f.Name, PartitionValues: f.PartitionValues, Owned: true}
	}
	res, err := w.c.Append(ctx, wf)
	if err != nil {
		return 0, classify(err)
	}
	return res.Version, nil
}

func (w inboxWriter) Check(ctx context.Context, files []inbox.StagedFile) error {
	if w.refuse != nil {
		return classify(w.refuse)
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, w.c.Validate(ctx, writeback.File{LocalPath: f.LocalPath, Name: f.Name, PartitionValues: f.PartitionValues}))
	}
	return classify(errors.Join(errs...))
}

// classified is an error of the committer that also matches a nodes
// sentinel, keeping the committer's message.
type classified struct {
	err, kind error
}

func (c *classified) Error() string   { return c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.err, c.kind} }

// classify adds nodes.ErrInvalidFile or nodes.ErrNotWritable to the
// committer's matching errors; others (storage, conflicts) pass as they
// are and become EIO.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, writeback.ErrInvalidFile):
		return &classified{err: err, kind: nodes.ErrInvalidFile}
	case errors.Is(err, writeback.ErrNotWritable):
		return &classified{err: err, kind: nodes.ErrNotWritable}
	}
	return err
}

// stagingBudget counts staged inbox files against the disk cache's limit
// (--cache-size): staging evicts cached files to make room, and a write
// beyond what the limit holds fails with ENOSPC.
type stagingBudget struct{ c *blobcache.Cache }

func (b stagingBudget) Reserve(n int64) error {
	if err := b.c.Reserve(n); err != nil {
		return fmt.Errorf("staging: %w (--cache-size bounds the disk cache and staged inbox files together): %w", syscall.ENOSPC, err)
	}
	return nil
}

func (b stagingBudget) Release(n int64) { b.c.Release(n) }

// inboxHeadroom is the part of --cache-size that rewritten files never
// take on a writable mount, kept for staged inbox files: a quarter, so
// that readers holding rewritten files open never make an append of up to
// that size fail (and closed rewritten files make room for larger ones).
func inboxHeadroom(cfg Config) int64 {
	if cfg.ReadOnly {
		return 0
	}
	return cfg.CacheSize / 4
}
