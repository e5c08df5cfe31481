package inbox

// Batches: a scratch directory renamed to a final name commits every
// Parquet file under it as ONE version (see rename.go for the
// rules shared with single files, and the doc of commitBatch).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/nodes"
)

// batchFile is a file of a batch: the file, its path in the batch's
// final place and its partition values.
type batchFile struct {
	f     *File
	rel   string
	parts map[string]*string
	ok    bool // at a depth where files go (else its error is in batch.errs)
}

// batch is a scratch directory being committed to a final name.
type batch struct {
	in      *Inbox
	files   []batchFile // the Parquet files to commit
	other   []*File     // temporary names inside (_SUCCESS, .crc files): discarded with the batch
	dirs    []*Dir      // every directory of the batch, its root first
	errs    []error     // why files or directories cannot be committed
	busy    []string    // files still open for writing or committing
	locked  []*File     // files set to committing
	size    int64
	rootRel string
}

// commitBatch commits every Parquet file under the scratch directory sd
// as one version, as if sd's content had been written in dst/name: name
// is a partition directory when it has the form col=value (it must then
// be the next partition column, as for mkdir), else just a label.
// Entries with temporary names inside are not committed and are
// discarded with the batch.
func (in *Inbox) commitBatch(ctx context.Context, sd *Dir, dst *Dir, name string) syscall.Errno {
	rel, from := dst.relOf(name), sd.relPath()
	if err := in.writable(ctx); err != nil {
		return in.refuseRename(rel, from, err)
	}
	parts, depth := maps.Clone(dst.parts), len(dst.parts)
	if strings.Contains(name, "=") {
		col, val, err := in.partitionDir(ctx, depth, name)
		if err != nil {
			return in.refuseRename(rel, from, err)
		}
		if parts == nil {
			parts = map[string]*string{}
		}
		parts[col], depth = val, depth+1
	}
	in.mu.Lock()
	if in.batches[sd] {
		in.mu.Unlock()
		return syscall.EBUSY
	}
	in.batches[sd] = true
	staged := slices.Collect(maps.Keys(in.files))
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.batches, sd)
		in.mu.Unlock()
	}()

	b := &batch{in: in, rootRel: rel}
	b.walk(ctx, sd, rel, parts, depth)
	b.lockOut(staged)
	b.lock()
	if len(b.busy) > 0 {
		b.unlock()
		in.refuseRename(rel, from, fmt.Errorf("batch %s: still being written or committed: %s", rel, strings.Join(b.busy, ", ")))
		return syscall.EBUSY
	}
	if len(b.files) == 0 && len(b.errs) == 0 {
		b.errs = append(b.errs, fmt.Errorf("%w: batch %s holds no Parquet file (a file to commit has a name ending in .parquet, not starting with '.' or '_')", nodes.ErrInvalidFile, rel))
	}
	sfs := b.staged()
	if len(b.errs) > 0 {
		// Refused for its layout: name the bad content too.
		if err := in.writer.Check(ctx, sfs); err != nil {
			b.errs = append(b.errs, err)
		}
		b.unlock()
		return in.refuseRename(rel, from, errors.Join(b.errs...))
	}
	start := time.Now()
	cctx, cancel := in.commitContext(ctx)
	defer cancel()
	v, err := in.writer.Append(cctx, sfs)
	if err != nil && keepOnRefusal(err) {
		b.unlock()
		return in.refuseRename(rel, from, err)
	}
	b.discard(sd, err)
	if err != nil {
		return in.refuseRename(rel, from, err)
	}
	in.published(context.WithoutCancel(ctx), StatusEvent{Op: "commit", File: rel, From: from, Files: len(sfs), Bytes: b.size, Version: &v}, start)
	forgetRenamed(dst, name)
	return 0
}

// staged returns the batch's files that are in place (their directories
// are partition directories of the table), for the Writer.
func (b *batch) staged() []StagedFile {
	var out []StagedFile
	for _, bf := range b.files {
		if bf.ok {
			out = append(out, StagedFile{LocalPath: bf.f.path, Name: bf.rel, PartitionValues: bf.parts})
		}
	}
	return out
}

// walk collects the files under dir (at partition depth depth, with
// partition values parts), named as under rel.
func (b *batch) walk(ctx context.Context, dir *Dir, rel string, parts map[string]*string, depth int) {
	b.dirs = append(b.dirs, dir)
	children := dir.Children()
	names := make([]string, 0, len(children))
	for n := range children {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch op := children[n].Operations().(type) {
		case *Dir:
			b.walkDir(ctx, op, n, path.Join(rel, n), parts, depth)
		case *File:
			if isTemporaryName(n) {
				b.other = append(b.other, op)
				continue
			}
			err := b.in.checkDepth(ctx, depth)
			if err != nil {
				b.errs = append(b.errs, fmt.Errorf("%s: %w", path.Join(rel, n), err))
			}
			b.files = append(b.files, batchFile{f: op, rel: path.Join(rel, n), parts: parts, ok: err == nil})
		}
	}
}

// walkDir walks a subdirectory n of a batch: a partition directory of the
// next column, or a temporary one whose files are discarded.
func (b *batch) walkDir(ctx context.Context, d *Dir, n, rel string, parts map[string]*string, depth int) {
	if isTemporaryDirName(n) {
		b.walkTemporary(d, rel)
		return
	}
	col, val, err := b.in.partitionDir(ctx, depth, n)
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("%s: %w", rel, err))
		return
	}
	sub := maps.Clone(parts)
	if sub == nil {
		sub = map[string]*string{}
	}
	sub[col] = val
	b.walk(ctx, d, rel, sub, depth+1)
}

// checkDepth returns why a file at partition depth depth cannot be
// committed, or nil.
func (in *Inbox) checkDepth(ctx context.Context, depth int) error {
	cols, err := in.writer.PartitionColumns(ctx)
	if err != nil {
		return err
	}
	if depth < len(cols) {
		return fmt.Errorf("%w: table %s is partitioned: files go in %s", nodes.ErrInvalidFile, in.name, partitionHint(cols))
	}
	return nil
}

// walkTemporary collects a temporary directory inside a batch (an empty
// _temporary/ left by a job, .cache/): its files are discarded, unless
// one has a final name: then a job has not finished (Spark's task output
// waits there until the job commits), and the batch is refused.
func (b *batch) walkTemporary(d *Dir, rel string) {
	b.dirs = append(b.dirs, d)
	for n, ch := range d.Children() {
		switch op := ch.Operations().(type) {
		case *Dir:
			b.walkTemporary(op, path.Join(rel, n))
		case *File:
			if !isTemporaryName(n) {
				b.errs = append(b.errs, fmt.Errorf("%w: %s: a Parquet file under a temporary directory (has the job that writes it finished?): move it out or remove it", nodes.ErrInvalidFile, path.Join(rel, n)))
			}
			b.other = append(b.other, op)
		}
	}
}

// lockOut notes in b.busy the staged files in the batch's directories
// that the walk did not see: created (or moved in) just before the batch
// took sd, and not yet in the tree. The batch is refused (EBUSY) rather
// than removing them with its directories: their close() would return 0
// for data dropped. Creates after the batch took sd are EBUSY
// (inbox.admit). (A directory made there since is empty: a create in it
// waits for its mkdir, and then finds the batch.)
func (b *batch) lockOut(staged []*File) {
	seen := map[*File]bool{}
	for _, bf := range b.files {
		seen[bf.f] = true
	}
	for _, f := range b.other {
		seen[f] = true
	}
	dirs := map[*Dir]bool{}
	for _, d := range b.dirs {
		dirs[d] = true
	}
	for _, f := range staged {
		f.mu.Lock()
		dir, name := f.dir, f.name
		f.mu.Unlock()
		if !seen[f] && dirs[dir] {
			b.busy = append(b.busy, name+" (being created)")
		}
	}
}

// lock sets the batch's files to committing; a file open for writing or
// already committing is noted in b.busy (and not locked).
func (b *batch) lock() {
	for _, bf := range b.files {
		f := bf.f
		f.mu.Lock()
		if f.state != stateStaged || f.writer != nil {
			b.busy = append(b.busy, bf.rel)
		} else {
			if f.writeErr != nil {
				b.errs = append(b.errs, fmt.Errorf("%s: a write to the staged file failed, so it is incomplete: %w", bf.rel, f.writeErr))
			}
			f.state, f.done = stateCommitting, make(chan struct{})
			b.size += f.staged
			b.locked = append(b.locked, f)
		}
		f.mu.Unlock()
	}
}

// unlock puts the locked files back to staged: the batch stays as it was.
func (b *batch) unlock() {
	for _, f := range b.locked {
		f.restage()
	}
	b.locked = nil
}

// discard removes the batch from the inbox once committed (err == nil)
// or after storage trouble: every staged file under it is removed and
// the directory leaves the tree (files still open just write no more).
func (b *batch) discard(sd *Dir, err error) {
	errno := syscall.Errno(0)
	if err != nil {
		errno = syscall.EIO
	}
	for _, f := range b.locked {
		b.in.drop(f, false)
		f.finish(errno)
	}
	for _, f := range b.other {
		f.abandon()
		b.in.drop(f, false)
	}
	for i := len(b.dirs) - 1; i >= 0; i-- {
		d := b.dirs[i]
		d.gone.Store(true)
		if name, parent := d.Parent(); parent != nil {
			parent.RmChild(name)
		}
		d.ForgetPersistent()
	}
}
