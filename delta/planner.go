package delta

import (
	"errors"
	"fmt"
	"slices"
)

// The segment planner decides which log files a snapshot of one version is
// built from, and nothing else: it does no I/O. Given what is known of the
// log (a listing, the newest snapshot's segment, a listing from version 0,
// _last_checkpoint, the checkpoints that failed lately), it returns the
// version's LogSegment, or the version the next listing must start from.
// The build (build.go) makes the listings it asks for.

// LogSegment is what a snapshot of one version is built from: the newest
// complete checkpoint at or before Version (if any) and the commits after
// it. Invariants: Commits are exactly versions CheckpointVersion+1 ..
// Version in order (0 .. Version when there is no checkpoint); Checkpoint
// holds every part of one checkpoint, or is empty with CheckpointVersion -1.
type LogSegment struct {
	Version           int64
	CheckpointVersion int64
	Checkpoint        []LogFile
	Commits           []LogFile
	// CheckpointCommit is the commit file of the checkpoint's version when
	// the listing had it (zero otherwise): its time and commitInfo.
	CheckpointCommit LogFile
}

// segmentPlanner plans segments from what a Table knows of its log. Its
// fields are a copy taken for one build.
type segmentPlanner struct {
	bad    map[int64]bool // checkpoint versions not to use: they failed to read lately
	latest *LogSegment    // the newest snapshot's segment, nil if none
	full   *logListing    // a listing of the log from version 0, nil if none
}

// listWindow is how far before a version its first listing starts when no
// checkpoint is known, and the least a listing that started too late moves
// back; each move quadruples the distance, so that a version 10^5 commits
// past its checkpoint takes about six listings, not a hundred.
const listWindow = 1000

// known returns v's segment when hint (a listing the caller just made, may
// be nil) or the full listing holds it, and the listing it came from. ok
// is false when neither does: the log must be listed, from firstListing.
// A hint that starts after v's checkpoint is extended from the newest
// snapshot's segment when it continues it (a refresh lists only the new
// commits); a hint that fails otherwise is ignored, the full listing's
// answer is final.
func (p *segmentPlanner) known(v int64, hint *logListing) (seg *LogSegment, l *logListing, ok bool, err error) {
	if hint != nil {
		seg, err := p.segment(v, hint)
		if errors.Is(err, errNeedEarlier) {
			seg, err = p.extended(v, hint)
		}
		if err == nil {
			return seg, hint, true, nil
		}
	}
	if p.full != nil && v <= p.full.maxV {
		seg, err := p.segment(v, p.full)
		return seg, p.full, true, err
	}
	return nil, nil, false, nil
}

// firstListing returns the version the first listing for v starts from:
// the checkpoint _last_checkpoint names (lc, when hasLC) if it is at or
// before v and not bad, else listWindow versions before v.
func (p *segmentPlanner) firstListing(v int64, lc LastCheckpoint, hasLC bool) int64 {
	if hasLC && lc.Version <= v && !p.bad[lc.Version] {
		return lc.Version
	}
	return max(0, v-listWindow)
}

// fromListing returns v's segment from l, a listing made for it. When l
// starts after v's checkpoint (or there is none in it), it returns instead
// the version the next listing starts from, as next >= 0 with a nil
// segment; next is -1 otherwise.
func (p *segmentPlanner) fromListing(v int64, l *logListing) (seg *LogSegment, next int64, err error) {
	seg, err = p.segment(v, l)
	if errors.Is(err, errNeedEarlier) {
		return nil, max(0, l.from-max(listWindow, 3*(v-l.from))), nil
	}
	return seg, -1, err
}

// extended returns v's segment as the newest snapshot's segment plus the
// commits of l, a listing that starts at or right after that snapshot's
// version (a refresh): no checkpoint was written since, so v keeps its
// checkpoint. It fails with errNeedEarlier when there is no such snapshot,
// its checkpoint went bad, or l's commits do not continue it.
func (p *segmentPlanner) extended(v int64, l *logListing) (*LogSegment, error) {
	prev := p.latest
	if prev == nil || l.from < prev.Version || l.from > prev.Version+1 || v <= prev.Version || p.bad[prev.CheckpointVersion] {
		return nil, errNeedEarlier
	}
	seg := &LogSegment{Version: v, CheckpointVersion: prev.CheckpointVersion, Checkpoint: prev.Checkpoint,
		CheckpointCommit: prev.CheckpointCommit}
	seg.Commits = slices.Clone(prev.Commits)
	for c := prev.Version + 1; c <= v; c++ {
		f, ok := l.commits.get(c)
		if !ok {
			return nil, errNeedEarlier
		}
		seg.Commits = append(seg.Commits, f)
	}
	return seg, nil
}

// segment returns v's segment from the listing l, skipping the bad
// checkpoints. It fails with errNeedEarlier when l starts after v's
// checkpoint, with ErrVersionNotFound when v is beyond l or cannot be
// reconstructed from it, and with ErrCorruptLog on a gap.
func (p *segmentPlanner) segment(v int64, l *logListing) (*LogSegment, error) {
	if v > l.latestVersion() {
		return nil, &VersionNotFoundError{Version: v, Latest: l.latestVersion()}
	}
	seg := &LogSegment{Version: v, CheckpointVersion: -1}
	// The newest complete checkpoint at or before v that is not marked
	// bad, found by whichever is shorter: walking the versions down from v
	// (a table checkpointing every few commits) or the listing's
	// checkpoint versions (a long log with few checkpoints). Versions
	// without checkpoint files cost a map lookup, never an allocation.
	try := func(cv int64) bool {
		if p.bad[cv] || len(l.checkpt[cv]) == 0 {
			return false
		}
		if cp := l.completeCheckpoint(cv); len(cp) > 0 {
			seg.CheckpointVersion, seg.Checkpoint = cv, cp
			seg.CheckpointCommit, _ = l.commits.get(cv)
			return true
		}
		return false
	}
	if int64(len(l.checkpt)) < v-l.from+1 {
		cvs := make([]int64, 0, len(l.checkpt))
		for cv := range l.checkpt {
			if cv <= v && cv >= l.from {
				cvs = append(cvs, cv)
			}
		}
		slices.Sort(cvs)
		for i := len(cvs) - 1; i >= 0; i-- {
			if try(cvs[i]) {
				break
			}
		}
	} else {
		for cv := v; cv >= l.from; cv-- {
			if try(cv) {
				break
			}
		}
	}
	start := seg.CheckpointVersion + 1
	if seg.CheckpointVersion < 0 && l.from > 0 {
		return nil, errNeedEarlier
	}
	for c := start; c <= v; c++ {
		f, ok := l.commits.get(c)
		if !ok {
			if seg.CheckpointVersion < 0 && l.commits.len() > 0 && c == 0 {
				return nil, &VersionNotFoundError{Version: v, Latest: l.latestVersion(), Reason: "commit 0 is missing and no checkpoint precedes it (log cleaned up?)"}
			}
			return nil, corruptf("version %d: commit %d is missing (the commits after checkpoint %d are not contiguous)", v, c, seg.CheckpointVersion)
		}
		seg.Commits = append(seg.Commits, f)
	}
	return seg, nil
}

// errNeedEarlier says the listing starts too late to hold a checkpoint for
// the requested version: list from an earlier version.
var errNeedEarlier = fmt.Errorf("listing starts after the version's checkpoint")
