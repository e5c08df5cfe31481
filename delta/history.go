package delta

import (
	"context"
	"encoding/json"
	"time"
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

// History returns the summaries of the versions whose commit files exist,
// oldest first. Timestamps follow VersionAt's rule (ICT where enabled, else
// monotonized file times).
func (t *Table) History(ctx context.Context) ([]CommitSummary, error) {
	latest, err := t.Latest(ctx)
	if err != nil {
		return nil, err
	}
	l, err := t.fullListing(ctx)
	if err != nil {
		return nil, err
	}
	mtimes := monotonicMTimes(l)
	var files []LogFile
	for v := int64(0); v <= l.maxV; v++ {
		if f, ok := l.commits.get(v); ok {
			files = append(files, f)
		}
	}
	commits, err := readCommits(ctx, files, t.readCommitCached)
	if err != nil {
		return nil, t.wrap(-1, err)
	}
	md := latest.Metadata()
	out := make([]CommitSummary, 0, len(commits))
	for _, c := range commits {
		out = append(out, summarize(c, mtimes[c.version], md))
	}
	return out, nil
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
