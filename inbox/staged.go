package inbox

// The "staged" line of _status.jsonl: how a temporary that was closed will
// commit, and when it expires.

import "time"

// What the inbox says of the files it keeps without a commit: a staged
// temporary gets a "staged" line of _status.jsonl and a log line at its
// close, saying how it commits and when it expires; the unmount logs the
// staged files it drops. So every file dropped into the inbox has an
// outcome a user can find.

// Notes of the "staged" line: how a temporary commits.
const (
	stagedFileNote = "staged, not committed: a temporary name (no .parquet suffix, or a leading . or _); " +
		"rename it to a final name ending in .parquet to commit it"
	stagedScratchNote = "staged, not committed: in a temporary directory (a leading . or _); " +
		"rename the directory to a final name to commit its Parquet files as one version"
)

// stagedNoteLocked returns the "staged" line of a temporary file at its
// close, once per content (a new write or rename gives a new line); ok is
// false when there is nothing to say (empty, or already said).
func (f *File) stagedNoteLocked() (e StatusEvent, ok bool) {
	if f.staged == 0 || f.noted.Equal(f.active) {
		return StatusEvent{}, false
	}
	f.noted = f.active
	e = StatusEvent{Op: "staged", File: f.relLocked(), Bytes: f.staged, Note: stagedFileNote}
	if f.dir.scratch {
		e.Note = stagedScratchNote
	}
	if after := f.in.staleAfter; after > 0 {
		exp := f.active.Add(after).UTC()
		e.Expires = &exp
	}
	return e, true
}

// noteStaged writes the "staged" line and its log line.
func (in *Inbox) noteStaged(e StatusEvent) {
	in.status.add(e)
	attrs := []any{"table", in.name, "file", e.File, "bytes", e.Bytes}
	if e.Expires != nil {
		attrs = append(attrs, "expires", e.Expires.Format(time.RFC3339))
	} else {
		attrs = append(attrs, "expires", "never")
	}
	in.tree.Logger().Info("deltafs: inbox: "+e.Note+" (removed uncommitted if left idle until it expires)", attrs...)
}

// LogDropped logs each staged file of the inbox that was not committed,
// which the unmount drops (the mount calls it once the kernel is gone).
func (in *Inbox) LogDropped() {
	for _, p := range in.pending() {
		in.tree.Logger().Info("deltafs: unmount: staged inbox file dropped, not committed",
			"table", in.name, "file", p.File, "bytes", p.Bytes, "temporary", p.Temporary)
	}
}
