package delta

// The commit history: one CommitSummary per version (operation, time,
// metrics from commitInfo), read from a commit's first bytes, and the size
// of its text form known without reading every commit (HistorySize).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/deltafs/deltafs/delta/action"
)

// CommitSummary is one version's entry of the table history, from its
// commitInfo.
type CommitSummary struct {
	Version             int64          `json:"version"`
	Timestamp           time.Time      `json:"timestamp"`
	Operation           string         `json:"operation,omitempty"`
	OperationParameters map[string]any `json:"operationParameters,omitempty"`
	OperationMetrics    map[string]any `json:"operationMetrics,omitempty"`
	EngineInfo          string         `json:"engineInfo,omitempty"`
	InCommitTimestamp   *int64         `json:"inCommitTimestamp,omitempty"`
}

// historyBatch is how many commits History reads (concurrently) at a time.
const historyBatch = 256

// History returns the summaries of the versions whose commit files exist,
// oldest first. Timestamps follow VersionAt's rule (ICT where enabled, else
// monotonized file times). It holds every summary: use HistoryEach for
// long logs.
func (t *Table) History(ctx context.Context) ([]CommitSummary, error) {
	var out []CommitSummary
	err := t.HistoryEach(ctx, 0, -1, func(c CommitSummary) error {
		out = append(out, c)
		return nil
	})
	return out, err
}

// HistoryEach calls fn with the summary of each version in [from, to]
// (to < 0: up to the latest) whose commit file exists, oldest first,
// reading the commits in batches: memory holds one batch, whatever the
// length of the log. Commits read here are not kept in the commit cache.
func (t *Table) HistoryEach(ctx context.Context, from, to int64, fn func(CommitSummary) error) error {
	// A range the newest snapshot and listing already cover (a reader of
	// _history.jsonl asks chunk by chunk) lists nothing: a listing of a
	// long local log reads its whole directory.
	latest := t.Current()
	if latest == nil || to < 0 || to > latest.version {
		var err error
		if latest, err = t.Latest(ctx); err != nil {
			return err
		}
	}
	if to < 0 || to > latest.version {
		to = latest.version
	}
	l, err := t.fullListingTo(ctx, to)
	if err != nil {
		return err
	}
	md := latest.Metadata()
	// File times matter only to versions whose time is not an in-commit
	// timestamp: a log listed by name is stat-ed commit by commit.
	timed := !ictApplies(md, max(from, 0))
	if timed {
		if err := l.fillTimes(ctx, t.store); err != nil {
			return t.wrap(-1, err)
		}
	}
	i := l.commits.search(from)
	for i < l.commits.len() && l.commits.entries[i].version <= to {
		var files []LogFile
		var idx []int
		for ; i < l.commits.len() && l.commits.entries[i].version <= to && len(files) < historyBatch; i++ {
			files = append(files, l.commits.file(i))
			idx = append(idx, i)
		}
		commits, err := readCommits(ctx, files, func(ctx context.Context, f LogFile) (*commitFile, error) {
			if c, ok := t.commits.Peek(commitKey{t, f.Version}); ok && c.file.Key == f.Key {
				return c, nil
			}
			return readCommitInfo(ctx, t.store, f)
		})
		if err != nil {
			return t.wrap(-1, err)
		}
		for k, c := range commits {
			s := summarize(c, l.commits.monotonicMs(idx[k]), md)
			if s.InCommitTimestamp == nil && !timed { // a commit without its timestamp: its file time then
				if err := l.fillTimes(ctx, t.store); err != nil {
					return t.wrap(-1, err)
				}
				timed = true
				s = summarize(c, l.commits.monotonicMs(idx[k]), md)
			}
			if err := fn(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// AppendLine appends the summary as one line of _history.jsonl: JSON
// without HTML escaping (an operation parameter "a < b" stays readable),
// then a newline. The line's length is what HistorySize counts.
func (c CommitSummary) AppendLine(b []byte) []byte {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		// Only unencodable operation parameters (NaN cannot come from
		// JSON): say so on the line rather than drop it.
		fmt.Fprintf(buf, "{\"version\":%d,\"error\":%q}\n", c.Version, err.Error())
	}
	return buf.Bytes()
}

// knownLine returns the history line length of version v, if known.
func (t *Table) knownLine(v int64) (int32, bool) {
	return t.lines.get(v)
}

// noteLine keeps the history line length of commit f, whose commitInfo
// (raw) holds an in-commit timestamp that is its time by the newest
// metadata: the line then depends on nothing else.
func (t *Table) noteLine(f LogFile, raw json.RawMessage) {
	latest := t.Current()
	if latest == nil || !ictApplies(latest.Metadata(), f.Version) {
		return
	}
	c := &commitFile{version: f.Version, file: f, actions: []*Action{{CommitInfo: raw}}}
	s := summarize(c, 0, latest.Metadata())
	if s.InCommitTimestamp == nil {
		return
	}
	n := int32(len(s.AppendLine(nil)))
	t.lines.put(f.Version, n)
}

// readCommitInfo reads commit f keeping only its commitInfo action, the
// one a summary needs: the other lines (adds with their statistics, most
// of a commit) are not parsed, which makes the history of a long log
// several times cheaper to produce. A commit whose commitInfo is not
// found on a line of its own (one action a line, as the protocol writes
// them) is parsed whole.
func readCommitInfo(ctx context.Context, s Storage, f LogFile) (*commitFile, error) {
	buf := getHeadBuf()
	defer putHeadBuf(buf)
	data, whole, err := readHead(ctx, s, &f, buf)
	if err == nil {
		if line, ok := commitInfoLine(data, whole); ok {
			return parseCommitInfo(f, line)
		}
	}
	if err == nil && !whole {
		data, err = readSized(ctx, s, f.Key, f.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("read commit %d (%s): %w", f.Version, f.Key, err)
	}
	if line, ok := commitInfoLine(data, true); ok {
		data = line
	}
	return parseCommitInfo(f, data)
}

// historyPrefix is how much of a commit is read first for its commitInfo.
// Writers put it first (Spark, delta-rs and deltafs do, and in-commit
// timestamps require it), and Spark's is under 1 KB, so the rest of a
// commit, its file actions with their statistics (most of its bytes), is
// read only when the commitInfo is not within it.
const historyPrefix = 4 << 10

// headBufs are the buffers readCommitInfo reads prefixes into: the
// commitInfo is parsed (and copied) out of them, so a history of 100,000
// commits reads into a few buffers instead of allocating one each. A
// free list of as many as the readers at once (64 KB kept), not a
// sync.Pool, which a GC empties.
var headBufs = make(chan []byte, 16)

func getHeadBuf() []byte {
	select {
	case b := <-headBufs:
		return b
	default:
		return make([]byte, historyPrefix)
	}
}

func putHeadBuf(b []byte) {
	select {
	case headBufs <- b:
	default:
	}
}

// readHead reads the first len(buf) bytes of commit f into buf, and says
// whether that is the whole commit. When the reader knows the object's
// size and time (InfoReader), f gets them.
func readHead(ctx context.Context, s Storage, f *LogFile, buf []byte) (data []byte, whole bool, err error) {
	n := int64(len(buf))
	if f.Size > 0 && f.Size < n {
		n = f.Size
	}
	rc, err := s.ReadRange(ctx, f.Key, 0, n)
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	if ir, ok := rc.(InfoReader); ok { // the time and size come with the read
		if o := ir.ObjectInfo(); !o.ModTime.IsZero() {
			f.Size, f.ModTime = o.Size, o.ModTime
		}
	}
	k, err := io.ReadFull(rc, buf[:n])
	short := err == io.ErrUnexpectedEOF || err == io.EOF
	switch {
	case short && f.Size > 0 && int64(k) != f.Size:
		return nil, false, fmt.Errorf("read %s: got %d bytes, the listing says %d: %w", f.Key, k, f.Size, io.ErrUnexpectedEOF)
	case short:
		return buf[:k], true, nil // shorter than the prefix: all of it
	case err != nil:
		return nil, false, err
	}
	return buf[:k], int64(k) == f.Size, nil
}

// commitInfoLine returns the commitInfo line of data, the start of a
// commit (whole: all of it, else only its complete lines count).
func commitInfoLine(data []byte, whole bool) ([]byte, bool) {
	for rest := data; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 && !whole {
			return nil, false // a line cut by the prefix
		}
		line := rest
		if i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if isCommitInfoLine(line) {
			return line, true
		}
	}
	return nil, false
}

// parseCommitInfo keeps the commitInfo actions of data, commit f's.
func parseCommitInfo(f LogFile, data []byte) (*commitFile, error) {
	c := &commitFile{version: f.Version, file: f}
	keep := func(a *Action) error {
		if a.CommitInfo != nil {
			c.actions = append(c.actions, a)
		}
		return nil
	}
	if err := action.Parse(data, keep); err != nil {
		return nil, fmt.Errorf("parse commit %d (%s): %w", f.Version, f.Key, err)
	}
	return c, nil
}

// isCommitInfoLine reports whether a line of a commit is its commitInfo
// action: {"commitInfo": ...}, spaces allowed.
func isCommitInfoLine(line []byte) bool {
	line = bytes.TrimLeft(line, " \t\r")
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(line[1:], " \t\r"), []byte(`"commitInfo"`))
}

func summarize(c *commitFile, mtime int64, md *Metadata) CommitSummary {
	s := CommitSummary{Version: c.version, Timestamp: time.UnixMilli(mtime).UTC()}
	for _, a := range c.actions {
		if a.CommitInfo == nil {
			continue
		}
		var ci struct {
			Operation           string          `json:"operation"`
			OperationParameters map[string]any  `json:"operationParameters"`
			OperationMetrics    map[string]any  `json:"operationMetrics"`
			EngineInfo          string          `json:"engineInfo"`
			ICT                 *int64          `json:"inCommitTimestamp"`
			Raw                 json.RawMessage `json:"-"`
		}
		if json.Unmarshal(a.CommitInfo, &ci) == nil {
			s.Operation, s.OperationParameters, s.OperationMetrics = ci.Operation, ci.OperationParameters, ci.OperationMetrics
			s.EngineInfo, s.InCommitTimestamp = ci.EngineInfo, ci.ICT
			if ci.ICT != nil && ictApplies(md, c.version) {
				s.Timestamp = time.UnixMilli(*ci.ICT).UTC()
			}
		}
		break
	}
	return s
}

// ictApplies says whether version v's commit time is its in-commit timestamp.
func ictApplies(md *Metadata, v int64) bool {
	if !md.InCommitTimestampsEnabled() {
		return false
	}
	ev, _, ok := md.ICTEnablement()
	return !ok || v >= ev
}
