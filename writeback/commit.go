package writeback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/action"
)

// txn is one Append call across its commit attempts. Its id is written as
// commitInfo.txnId in every attempt, so that after an ambiguous failure the
// log tells whether an attempt landed.
type txn struct {
	id    string
	ups   []*uploaded
	start time.Time
	// base is the snapshot the latest attempt was built on.
	base *delta.Snapshot
	// maybeLanded is set when a put failed in a way that may have stored
	// the commit; the uploads must then not be removed on failure.
	maybeLanded bool
}

// Append validates and commits all files as ONE new version (a
// multi-file atomic append) and returns that version. Files are validated
// before anything is written: one bad file refuses the whole call
// (ErrInvalidFile; the error names every bad file) and leaves the table
// unchanged. Lost races are retried
// on the next version, re-validating when a winner changed the protocol or
// metadata, until Options.MaxRetry (then the error wraps
// delta.ErrConflict). A call commits at most one version: every attempt
// carries the same txnId, and a failed put whose outcome is unknown is
// resolved by reading the log before retrying. On failure the uploaded
// data files are removed unless the commit may have landed.
//
// The whole call is bounded by Options.CommitTimeout (see capped).
func (c *Committer) Append(ctx context.Context, files []File) (Result, error) {
	if len(files) == 0 {
		return Result{}, invalidf("no files to append")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.opts.CommitTimeout, ErrCommitTimeout)
	defer cancel()
	var tx *txn
	res, err := c.appendCapped(ctx, files, &tx)
	if err != nil && errors.Is(context.Cause(ctx), ErrCommitTimeout) {
		return Result{}, c.timedOut(tx, err)
	}
	return res, err
}

// timedOut is the error of an Append that hit the commit timeout: it
// says whether the commit may have landed (a put of it had an unknown
// outcome), since a caller must then not simply retry.
func (c *Committer) timedOut(tx *txn, err error) error {
	if tx != nil && tx.maybeLanded {
		return fmt.Errorf("%w (%v): its outcome is unknown, the version may exist (look for commitInfo.txnId %s in the log before retrying): %w",
			ErrCommitTimeout, c.opts.CommitTimeout, tx.id, err)
	}
	return fmt.Errorf("%w (%v): nothing was committed: %w", ErrCommitTimeout, c.opts.CommitTimeout, err)
}

// appendCapped is Append under its timeout; *txp is set once a commit
// attempt is under way.
func (c *Committer) appendCapped(ctx context.Context, files []File, txp **txn) (Result, error) {
	crashPoint(CrashStaged)
	snap, err := c.table.Latest(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := c.writable(snap); err != nil {
		return Result{}, err
	}
	preps, err := c.prepareAll(ctx, snap, files)
	if err != nil {
		return Result{}, err
	}
	defer cleanupAll(preps)
	ups, err := c.uploadAll(ctx, preps)
	if err != nil {
		return Result{}, err
	}
	crashPoint(CrashUploaded)
	tx := &txn{id: uuid.NewString(), ups: ups, start: time.Now()}
	*txp = tx
	v, err := c.commitLoop(ctx, snap, tx)
	if err != nil {
		if !tx.maybeLanded {
			c.removeUploads(tx.ups)
		}
		return Result{}, err
	}
	if c.due(v, tx.base, tx.base.Metadata().CheckpointInterval()) {
		c.scheduleCheckpoint(v) // in the background: the commit is acknowledged now
	}
	return Result{Version: v, Added: dataKeys(tx.ups)}, nil
}

// prepareAll validates every file, so that a refusal names each bad one
// (joined errors, each naming its file), not only the first.
func (c *Committer) prepareAll(ctx context.Context, snap *delta.Snapshot, files []File) ([]*prepared, error) {
	out := make([]*prepared, 0, len(files))
	var errs []error
	for _, f := range files {
		p, err := c.prepare(ctx, snap, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		cleanupAll(out)
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// cleanupAll removes the re-encoded copies of preps (prepared.cleanup).
func cleanupAll(preps []*prepared) {
	for _, p := range preps {
		p.cleanup()
	}
}

// takeTurn waits for this Committer's commit turn (see turn), or for ctx.
func (c *Committer) takeTurn(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (c *Committer) endTurn() { <-c.turn }

// attempt puts the commit at the version after snap (or after the newest
// version, when a commit of this process landed while it waited for its
// turn) and returns that version and the put's error; v is -1 when the
// attempt failed before the put, with err saying why.
func (c *Committer) attempt(ctx context.Context, snap *delta.Snapshot, tx *txn) (v int64, err error) {
	if err := c.takeTurn(ctx); err != nil {
		return -1, fmt.Errorf("append to %s: wait for the commit turn: %w", c.table.Name(), err)
	}
	defer c.endTurn()
	if latest, err := c.table.Latest(ctx); err == nil && latest.Version() > snap.Version() {
		// Snapshots share their protocol and metadata until a commit
		// changes them: re-validate only then.
		if latest.Metadata() != snap.Metadata() || latest.Protocol() != snap.Protocol() {
			if err := c.revalidate(ctx, latest, tx); err != nil {
				return -1, err
			}
		}
		snap = latest
	}
	v = snap.Version() + 1
	tx.base = snap
	body, err := c.buildCommit(snap, tx, v)
	if err != nil {
		return -1, err
	}
	if err := c.checkBase(ctx, snap); err != nil {
		return -1, err
	}
	crashPoint(CrashCommitting)
	return v, c.store.PutIfAbsent(ctx, delta.CommitKey(v), body)
}

// commitLoop puts the commit at the version after snap, rebuilding it on
// top of the winners after each lost race.
func (c *Committer) commitLoop(ctx context.Context, snap *delta.Snapshot, tx *txn) (int64, error) {
	deadline := tx.start.Add(c.opts.MaxRetry)
	wait := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		v, putErr := c.attempt(ctx, snap, tx)
		if v < 0 {
			return -1, putErr
		}
		if putErr == nil {
			crashPoint(CrashCommitted)
			c.committed(v)
			return v, nil
		}
		// Back off before re-reading the log, not after: a retry built on
		// a snapshot read before the sleep loses again to every commit made
		// during it, and many writers then land about one version per
		// backoff.
		if err := sleep(ctx, wait/2+rand.N(wait)); err != nil {
			if !errors.Is(putErr, delta.ErrExists) {
				tx.maybeLanded = true // the put's outcome is unknown
			}
			return -1, fmt.Errorf("append to %s: write commit %d: %w (put: %w)", c.table.Name(), v, err, putErr)
		}
		wait = min(2*wait, time.Second)
		landed, next, err := c.resolve(ctx, v, tx, putErr)
		if err != nil {
			return landed, err
		}
		if landed >= 0 {
			c.committed(landed)
			return landed, nil
		}
		if c.opts.OnConflict != nil {
			c.opts.OnConflict(v)
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("append to %s: lost the race for version %d (latest %d) for %v, %d attempts: %w",
				c.table.Name(), v, next.Version(), c.opts.MaxRetry, attempt, delta.ErrConflict)
		}
		c.log.Debug("commit lost race, retrying", "version", v, "latest", next.Version(), "attempt", attempt)
		snap = next
	}
}

// committed tells OnCommit of version v.
func (c *Committer) committed(v int64) {
	if c.opts.OnCommit != nil {
		c.opts.OnCommit(v)
	}
}

// resolve handles a failed put of version v. It returns the version where
// this txn's commit landed (>= 0), or the snapshot to retry on, or a
// permanent error.
func (c *Committer) resolve(ctx context.Context, v int64, tx *txn, putErr error) (int64, *delta.Snapshot, error) {
	if !errors.Is(putErr, delta.ErrExists) {
		_, err := c.store.Stat(ctx, delta.CommitKey(v))
		switch {
		case errors.Is(err, delta.ErrNotExist):
			// Not there now. A local commit (link(2)) fails for good, but
			// an object store may still complete a PUT whose answer was
			// lost: there, keep the data files so that such a late commit
			// never references deleted files (at worst they stay orphans).
			tx.maybeLanded = delta.LocalDir(c.store) == ""
			return -1, nil, fmt.Errorf("append to %s: write commit %d: %w", c.table.Name(), v, putErr)
		case err != nil:
			tx.maybeLanded = true
			return -1, nil, fmt.Errorf("append to %s: write commit %d (outcome unknown): %w", c.table.Name(), v, putErr)
		}
		// The commit exists: ours (the put failed after storing) or a winner's.
	}
	next, err := c.table.Latest(ctx)
	if err != nil {
		return -1, nil, c.ambiguous(tx, fmt.Errorf("append to %s: read the log after losing version %d: %w", c.table.Name(), v, err))
	}
	changed := false
	for w := v; w <= next.Version(); w++ {
		ci, meta, err := readWinner(ctx, c.store, w)
		if err != nil {
			return -1, nil, c.ambiguous(tx, fmt.Errorf("append to %s: read winning commit %d: %w", c.table.Name(), w, err))
		}
		if ci == tx.id {
			return w, nil, nil
		}
		changed = changed || meta
	}
	if next.Version() < v {
		if err := c.checkHidden(ctx, v); err != nil {
			return -1, nil, err
		}
		// The listing does not show the commit that exists yet: retry on the
		// same snapshot after the backoff.
		return -1, next, nil
	}
	if changed {
		if err := c.revalidate(ctx, next, tx); err != nil {
			return -1, nil, err
		}
	}
	return -1, next, nil
}

// checkHidden is called when the name of commit v is taken but the log
// does not list it. In an object store that is a listing not yet caught
// up; in a local directory, where a listing shows a new name at once, the
// name is held by something that is not a commit (a symbolic link, a
// directory, a FIFO) and every retry would lose to it: that is a damaged
// log, refused at once with its name.
func (c *Committer) checkHidden(ctx context.Context, v int64) error {
	dir := delta.LocalDir(c.store)
	if dir == "" {
		return nil
	}
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(delta.CommitKey(v))))
	if err != nil || fi.Mode().IsRegular() {
		return nil // gone, or a commit the next listing shows
	}
	return fmt.Errorf("append to %s: version %d cannot be written: %w: its commit name is taken by a %s, not a commit; nothing was committed",
		c.table.Name(), v, delta.ErrCorruptLog, describeType(fi.Mode()))
}

// describeType names a file type for a message.
func describeType(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "non-regular file"
}

// ambiguous marks the txn as possibly landed when an earlier put may have
// stored its commit, and returns err.
func (c *Committer) ambiguous(tx *txn, err error) error {
	tx.maybeLanded = true
	return err
}

// readWinner reads a winning commit: its commitInfo.txnId and whether it
// changes the protocol or metadata.
func readWinner(ctx context.Context, s delta.Storage, v int64) (txnID string, metaChange bool, err error) {
	data, err := delta.ReadAll(ctx, s, delta.CommitKey(v))
	if err != nil {
		return "", false, err
	}
	err = action.Parse(data, func(a *delta.Action) error {
		switch {
		case a.CommitInfo != nil:
			var ci struct {
				TxnID string `json:"txnId"`
			}
			if json.Unmarshal(a.CommitInfo, &ci) == nil {
				txnID = ci.TxnID
			}
		case a.Protocol != nil, a.MetaData != nil:
			metaChange = true
		}
		return nil
	})
	return txnID, metaChange, err
}

// revalidate re-checks the files against a snapshot whose protocol or
// metadata changed. A file that is still valid keeps its upload when the
// upload is still right (same physical names, partition path and stats),
// else it is uploaded again and the old upload removed.
func (c *Committer) revalidate(ctx context.Context, snap *delta.Snapshot, tx *txn) error {
	if err := c.writable(snap); err != nil {
		return fmt.Errorf("table changed while appending: %w", err)
	}
	for i, u := range tx.ups {
		p, err := c.prepare(ctx, snap, u.prep.file)
		if err != nil {
			return fmt.Errorf("table changed at version %d while appending: %w", snap.Version(), err)
		}
		if p.widened != u.prep.widened {
			// Re-encoded against the new schema: the copy lives only until
			// it is uploaded (the Append's cleanup knows the first one).
			defer p.cleanup()
		}
		if p.fingerprint() == u.prep.fingerprint() {
			continue
		}
		nu, err := c.upload(ctx, p)
		if err != nil {
			return err
		}
		c.removeUploads([]*uploaded{u})
		tx.ups[i] = nu
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkBase makes sure the log the commit extends is still there just
// before the put: the commit of snap's version (or, where old commits
// were cleaned up, its checkpoint). A table deleted or whose _delta_log
// was moved away under the writer would otherwise get a commit at
// version v+1 in an empty place: a log with no beginning. Only a definite
// "not there" refuses; a failed request leaves the decision to the put.
func (c *Committer) checkBase(ctx context.Context, snap *delta.Snapshot) error {
	v := snap.Version()
	_, err := c.store.Stat(ctx, delta.CommitKey(v))
	if err == nil || !errors.Is(err, delta.ErrNotExist) {
		return nil // there, or unknown: a flaky stat blocks nothing, the put decides
	}
	objs, lerr := c.store.List(ctx, delta.LogDir, fmt.Sprintf("%020d.", v))
	if lerr != nil && !errors.Is(lerr, delta.ErrNotExist) {
		return nil
	}
	for _, o := range objs {
		if f, ok := delta.ParseLogName(path.Base(o.Key)); ok && f.Version == v {
			return nil
		}
	}
	return fmt.Errorf("append to %s: %w: version %d, which this commit extends, is no longer in the log (the table was deleted, moved or replaced); nothing written", c.table.Name(), delta.ErrTableChanged, v)
}
