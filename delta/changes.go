package delta

// The change data feed [PROTOCOL.md "Change Data Files"]: the change
// files of a version range (cdc files, or adds and removes of commits
// that wrote none), with the deletion-vector pairs that say which rows of
// a file changed (Changes, Rows).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// A table's changes between two versions (the change data feed of the
// protocol's "Add CDC File" and "Change Data Files" sections, as Spark's
// table_changes and delta-kernel-rs's TableChanges read it) are planned
// here from the log alone: which files hold the rows of each version's
// changes and which of their rows are changes. Reading the rows is the
// caller's: each ChangeFile is a data or CDC file read with a selection
// of its rows, plus three columns of constants.
//
// The rules, per version (delta-kernel-rs table_changes/log_replay.rs):
//   - a commit with cdc actions: its changes are exactly the rows of its
//     cdc files, which carry their own _change_type column;
//   - otherwise: the rows of each add with dataChange are inserts, those
//     of each remove with dataChange deletes, deletion vectors applied;
//     an add and a remove of the same path (a deletion vector changed)
//     make deletes of the rows the new vector adds and inserts of those it
//     drops (resolve_dvs.rs), and actions without dataChange none.
//
// A range is refused, with ErrChangesUnavailable and the reason, when the
// feed was not enabled at its start or at a metadata change within it,
// when the schema within it is not the schema at its end, when a protocol
// in it cannot be read, or when a commit of it is no longer in the log.

// ErrChangesUnavailable marks a range of versions whose changes cannot be
// read (the reason is in the error).
var ErrChangesUnavailable = errors.New("changes not available")

// The change types of the feed's _change_type column.
const (
	ChangeInsert          = "insert"
	ChangeDelete          = "delete"
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
)

// ChangeFile is one file of a version's changes and which of its rows are
// changes.
type ChangeFile struct {
	Version int64
	// Timestamp is the version's _commit_timestamp: its in-commit
	// timestamp where enabled, else its commit file's modification time
	// (the rule of Version).
	Timestamp time.Time
	// Path is the file's path as its action gives it (relative to the
	// table or absolute, URL-encoded), Key its storage key, Size its size
	// in bytes (0 when a remove does not say).
	Path string
	Key  string
	Size int64
	// PartitionValues are the file's, by logical partition column.
	PartitionValues map[string]*string
	// ChangeType is every row's change type: insert or delete. It is ""
	// for a CDC file, whose rows carry their own _change_type.
	ChangeType string
	// Deleted is the deletion vector of rows that are not changes (an
	// add's or a remove's): nil when every row is, or when Resolve is set.
	Deleted *DeletionVector
	// Pair is set for a file whose deletion vector changed within the
	// version: its changes are the rows Resolve computes.
	Pair *DVPair
}

// DVPair is the deletion vectors before (Removed, the remove's) and after
// (Added, the add's) a change of one file's deletion vector in a commit;
// either may be nil (no rows deleted).
type DVPair struct{ Removed, Added *DeletionVector }

// Rows returns the rows of f that are changes, as a bitmap of row indexes
// to keep (keep != nil) or to drop (drop != nil; nil both: every row).
// Only a pair's resolution needs its deletion vectors read.
func (t *Table) Rows(ctx context.Context, f ChangeFile) (keep, drop *roaring64.Bitmap, err error) {
	if f.Pair == nil {
		if f.Deleted == nil {
			return nil, nil, nil
		}
		drop, err = LoadDeletionVector(ctx, t.store, t.name, f.Deleted)
		return nil, drop, err
	}
	before, err := LoadDeletionVector(ctx, t.store, t.name, f.Pair.Removed)
	if err != nil {
		return nil, nil, err
	}
	after, err := LoadDeletionVector(ctx, t.store, t.name, f.Pair.Added)
	if err != nil {
		return nil, nil, err
	}
	if f.ChangeType == ChangeInsert {
		return roaring64.AndNot(before, after), nil, nil // restored: deleted before, not after
	}
	return roaring64.AndNot(after, before), nil, nil // newly deleted
}

// Changes calls fn with the change files of versions from..to, oldest
// version first, reading one commit at a time. A range the feed cannot
// answer fails before fn is called, with ErrChangesUnavailable.
func (t *Table) Changes(ctx context.Context, from, to int64, fn func(ChangeFile) error) error {
	if from < 0 || to < from {
		return fmt.Errorf("changes of versions %d to %d: %w: the range is empty", from, to, ErrChangesUnavailable)
	}
	start, err := t.Snapshot(ctx, from)
	if err != nil {
		return err
	}
	end, err := t.Snapshot(ctx, to)
	if err != nil {
		return err
	}
	endSchema := end.Metadata().SchemaString
	if err := t.changesEnabled(from, start.Protocol(), start.Metadata(), endSchema); err != nil {
		return err
	}
	// Every commit is checked before any change is given: a refused range
	// gives nothing. The commits are read again to give their changes
	// (from the commit cache, mostly), so one is held at a time.
	p, m := start.Protocol(), start.Metadata()
	for v := from + 1; v <= to; v++ { // from's own actions are in start
		c, err := t.changeCommit(ctx, end, v)
		if err != nil {
			return err
		}
		if p, m, err = t.checkChangeCommit(c, p, m, endSchema); err != nil {
			return err
		}
	}
	for v := from; v <= to; v++ {
		c, err := t.changeCommit(ctx, end, v)
		if err != nil {
			return err
		}
		info, err := t.Version(ctx, v)
		if err != nil {
			return err
		}
		for _, f := range changeFiles(c, info.ModTime) {
			if f.Key, err = ResolvePath(t.name, f.Path); err != nil {
				return t.wrap(v, err)
			}
			if err := fn(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// changeCommit reads the commit of version v (end is the range's newest
// snapshot); a version whose commit left the log cannot give its changes.
func (t *Table) changeCommit(ctx context.Context, end *Snapshot, v int64) (*commitFile, error) {
	f, ok, err := t.commitOf(ctx, end, v)
	if err != nil {
		return nil, err
	}
	if !ok || f.Key == "" {
		return nil, t.wrap(v, fmt.Errorf("%w: its commit is no longer in the log (only a checkpoint is)", ErrChangesUnavailable))
	}
	return t.readCommitCached(ctx, f)
}

// changesEnabled refuses the metadata m of version v (with protocol p)
// unless it enables the feed, can be read, and has the range's end schema.
func (t *Table) changesEnabled(v int64, p *Protocol, m *Metadata, endSchema string) error {
	if err := CheckReadable(t.Name(), v, p, m); err != nil {
		return err
	}
	if m.Configuration["delta.enableChangeDataFeed"] != "true" {
		return t.wrap(v, fmt.Errorf("%w: the change data feed is not enabled here (delta.enableChangeDataFeed is not true)", ErrChangesUnavailable))
	}
	if !sameSchema(m.SchemaString, endSchema) {
		return t.wrap(v, fmt.Errorf("%w: the schema here is not the schema at the end of the range", ErrChangesUnavailable))
	}
	return nil
}

// checkChangeCommit checks the protocol and metadata changes of c against
// the feed's rules; p and m are those in effect before it, and the ones
// after it are returned.
func (t *Table) checkChangeCommit(c *commitFile, p *Protocol, m *Metadata, endSchema string) (*Protocol, *Metadata, error) {
	changed := false
	for _, a := range c.actions {
		switch {
		case a.Protocol != nil:
			p, changed = a.Protocol, true
		case a.MetaData != nil:
			m, changed = a.MetaData, true
		}
	}
	if !changed {
		return p, m, nil
	}
	return p, m, t.changesEnabled(c.version, p, m, endSchema)
}

// sameSchema compares two schema strings as JSON values (key order and
// spacing aside).
func sameSchema(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// changeFiles returns the change files of commit c, committed at ts.
func changeFiles(c *commitFile, ts time.Time) []ChangeFile {
	var out []ChangeFile
	for _, a := range c.actions {
		if a.CDC != nil {
			out = append(out, ChangeFile{Version: c.version, Timestamp: ts, Path: a.CDC.Path, Size: a.CDC.Size, PartitionValues: a.CDC.PartitionValues})
		}
	}
	if out != nil {
		return out
	}
	removed := map[string]*Remove{} // removes with dataChange, by path
	for _, a := range c.actions {
		if a.Remove != nil && a.Remove.DataChange {
			removed[a.Remove.Path] = a.Remove
		}
	}
	paired := map[string]bool{}
	for _, a := range c.actions {
		ad := a.Add
		if ad == nil || !ad.DataChange {
			continue
		}
		f := ChangeFile{Version: c.version, Timestamp: ts, Path: ad.Path, Size: ad.Size, PartitionValues: ad.PartitionValues, ChangeType: ChangeInsert}
		if r, ok := removed[ad.Path]; ok {
			paired[ad.Path] = true
			f.Pair = &DVPair{Removed: r.DeletionVector, Added: ad.DeletionVector}
			out = append(out, f)
			f.ChangeType = ChangeDelete
			out = append(out, f)
			continue
		}
		f.Deleted = ad.DeletionVector
		out = append(out, f)
	}
	for _, a := range c.actions {
		r := a.Remove
		if r == nil || !r.DataChange || paired[r.Path] {
			continue
		}
		var size int64
		if r.Size != nil {
			size = *r.Size
		}
		out = append(out, ChangeFile{Version: c.version, Timestamp: ts, Path: r.Path, Size: size, PartitionValues: r.PartitionValues,
			ChangeType: ChangeDelete, Deleted: r.DeletionVector})
	}
	return out
}
