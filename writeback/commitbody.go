package writeback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// commitInfo is the commitInfo action deltafs writes; field order is the
// JSON order.
type commitInfo struct {
	InCommitTimestamp   *int64            `json:"inCommitTimestamp,omitempty"`
	Timestamp           int64             `json:"timestamp"`
	Operation           string            `json:"operation"`
	OperationParameters map[string]string `json:"operationParameters"`
	ReadVersion         int64             `json:"readVersion"`
	IsolationLevel      string            `json:"isolationLevel"`
	IsBlindAppend       bool              `json:"isBlindAppend"`
	OperationMetrics    map[string]string `json:"operationMetrics"`
	EngineInfo          string            `json:"engineInfo"`
	TxnID               string            `json:"txnId"`
	Tags                map[string]string `json:"tags,omitempty"`
	// SourceFiles are the names the user gave the files, in add order.
	SourceFiles []string `json:"deltafs.sourceFiles"`
}

// buildCommit renders the commit of tx at version v on top of snap: the
// commitInfo first (in-commit timestamp when enabled), the row tracking
// domain when the high-water mark moves, then one add per file.
func (c *Committer) buildCommit(snap *delta.Snapshot, tx *txn, v int64) ([]byte, error) {
	adds, domain, err := c.buildAdds(snap, tx, v)
	if err != nil {
		return nil, err
	}
	ci := c.buildCommitInfo(snap, tx)
	if domain != nil {
		ci.Tags = map[string]string{"delta.rowTracking.preserved": "true"}
	}
	var buf bytes.Buffer
	raw, err := json.Marshal(ci)
	if err != nil {
		return nil, fmt.Errorf("encode commitInfo: %w", err)
	}
	actions := []delta.Action{{CommitInfo: raw}}
	if domain != nil {
		actions = append(actions, delta.Action{DomainMetadata: domain})
	}
	for _, a := range adds {
		actions = append(actions, delta.Action{Add: a})
	}
	for _, a := range actions {
		line, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("encode commit %d: %w", v, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

func (c *Committer) buildCommitInfo(snap *delta.Snapshot, tx *txn) *commitInfo {
	now := time.Now().UnixMilli()
	ci := &commitInfo{
		Timestamp:           now,
		Operation:           "WRITE",
		OperationParameters: map[string]string{"mode": "Append", "partitionBy": partitionByJSON(snap.Metadata())},
		ReadVersion:         snap.Version(),
		IsolationLevel:      "Serializable",
		IsBlindAppend:       true,
		EngineInfo:          c.opts.EngineInfo,
		TxnID:               tx.id,
	}
	if ictActive(snap) {
		ict := max(now, previousICT(snap)+1)
		ci.InCommitTimestamp, ci.Timestamp = &ict, ict
	}
	var rows, size int64
	for _, u := range tx.ups {
		rows += u.prep.numRecords
		size += u.size
		ci.SourceFiles = append(ci.SourceFiles, u.prep.display)
	}
	ci.OperationMetrics = map[string]string{
		"numFiles":       strconv.Itoa(len(tx.ups)),
		"numOutputRows":  strconv.FormatInt(rows, 10),
		"numOutputBytes": strconv.FormatInt(size, 10),
	}
	return ci
}

// buildAdds returns the add actions and, under row tracking, the domain
// recording the new high-water mark (nil when it does not move). Row ids
// are assigned in file order from the mark of snap + 1.
func (c *Committer) buildAdds(snap *delta.Snapshot, tx *txn, v int64) ([]*delta.Add, *delta.DomainMetadata, error) {
	track := rowTrackingActive(snap)
	next := int64(0)
	if track {
		hwm, err := rowIDHighWaterMark(snap)
		if err != nil {
			return nil, nil, err
		}
		next = hwm + 1
	}
	start := next
	adds := make([]*delta.Add, 0, len(tx.ups))
	for _, u := range tx.ups {
		a := &delta.Add{
			Path: u.logPath, PartitionValues: u.prep.partValues, Size: u.size,
			ModificationTime: u.modTime, DataChange: true, Stats: u.prep.stats,
		}
		if track {
			base, version := next, v
			a.BaseRowID, a.DefaultRowCommitVersion = &base, &version
			next += u.prep.numRecords
		}
		adds = append(adds, a)
	}
	if !track || next == start {
		return adds, nil, nil
	}
	return adds, rowTrackingDomain(next - 1), nil
}

// ictActive: in-commit timestamps are written when the feature is
// supported and delta.enableInCommitTimestamps is true.
func ictActive(snap *delta.Snapshot) bool {
	return snap.Protocol().HasWriterFeature("inCommitTimestamp") && snap.Metadata().InCommitTimestampsEnabled()
}

// previousICT is the in-commit timestamp of snap's version: from its
// commitInfo, else its commit time, else 0 (commit file gone).
func previousICT(snap *delta.Snapshot) int64 {
	var ci struct {
		ICT *int64 `json:"inCommitTimestamp"`
	}
	if raw := snap.CommitInfo(); raw != nil && json.Unmarshal(raw, &ci) == nil && ci.ICT != nil {
		return *ci.ICT
	}
	if ts := snap.Timestamp(); !ts.IsZero() {
		return ts.UnixMilli()
	}
	return 0
}

func partitionByJSON(m *delta.Metadata) string {
	cols := m.PartitionColumns
	if cols == nil {
		cols = []string{}
	}
	b, _ := json.Marshal(cols)
	return string(b)
}
