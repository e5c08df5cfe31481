package writeback

import (
	"context"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// Checkpoints are written off the acknowledgement path: an Append returns
// once its commit exists (PROTOCOL.md, "Checkpoints": a checkpoint only
// summarizes commits that exist, readers never need it), and a checkpoint
// is then written in the background, one at a time per Committer (one per
// table), retried a few times. A crash before it is written loses
// nothing: the log is complete without it, and the next commit of any
// Committer of the table finds the last checkpoint an interval or more
// behind and writes one (see due).

// checkpointRetries are the waits before each retry of a failed checkpoint.
var checkpointRetries = []time.Duration{time.Second, 4 * time.Second, 16 * time.Second}

// due reports whether a commit at v, built on base, should be followed by
// a checkpoint: v is an interval or more past the newest checkpoint known
// (the one base was built from, or the last this Committer wrote or
// scheduled).
func (c *Committer) due(v int64, base *delta.Snapshot, every int) bool {
	if v <= 0 || every <= 0 {
		return false
	}
	c.cpMu.Lock()
	last := max(base.CheckpointVersion(), c.cpWant, c.cpDone)
	c.cpMu.Unlock()
	return v%int64(every) == 0 && v > last || v-max(last, 0) >= int64(every)
}

// scheduleCheckpoint asks for a checkpoint at v (or a later version
// asked since) and starts the writer goroutine if none runs.
func (c *Committer) scheduleCheckpoint(v int64) {
	c.cpMu.Lock()
	defer c.cpMu.Unlock()
	if v <= c.cpWant || c.closed {
		return
	}
	c.cpWant = v
	if c.cpRunning {
		return
	}
	c.cpRunning = true
	c.cpWG.Add(1)
	go c.checkpointLoop()
}

// checkpointLoop writes the wanted checkpoints until none is left.
func (c *Committer) checkpointLoop() {
	defer c.cpWG.Done()
	for {
		c.cpMu.Lock()
		v := c.cpWant
		if v <= c.cpDone || c.bg.Err() != nil {
			c.cpRunning = false
			c.cpMu.Unlock()
			return
		}
		c.cpMu.Unlock()
		c.writeCheckpoint(v)
		c.cpMu.Lock()
		c.cpDone = max(c.cpDone, v) // failed for good: the next due commit tries again
		c.cpMu.Unlock()
	}
}

// writeCheckpoint writes the checkpoint of version v, retrying; failures
// are logged (the commits stand).
func (c *Committer) writeCheckpoint(v int64) {
	for attempt := 0; ; attempt++ {
		err := c.checkpointOnce(v)
		if err == nil {
			c.log.Debug("checkpoint written", "version", v)
			if c.opts.OnCheckpoint != nil {
				c.opts.OnCheckpoint(v)
			}
			return
		}
		if attempt >= len(checkpointRetries) || c.bg.Err() != nil {
			c.log.Warn("checkpoint failed; the commits stand", "version", v, "attempts", attempt+1, "err", err)
			return
		}
		select {
		case <-time.After(checkpointRetries[attempt]):
		case <-c.bg.Done():
		}
	}
}

// checkpointOnce builds the snapshot of v and writes its checkpoint,
// bounded by the commit timeout.
func (c *Committer) checkpointOnce(v int64) error {
	ctx, cancel := context.WithTimeout(c.bg, c.opts.CommitTimeout)
	defer cancel()
	snap, err := c.table.Snapshot(ctx, v)
	if err != nil {
		return err
	}
	return delta.WriteCheckpoint(ctx, crashStore(c.store), snap)
}

// WaitCheckpoints waits until the checkpoints asked for so far are
// written (or failed): `deltafs append` calls it before exiting.
func (c *Committer) WaitCheckpoints() { c.cpWG.Wait() }

// Close stops the background checkpoint writer (a checkpoint being
// written is abandoned: the log does not need it) and waits for it.
func (c *Committer) Close() {
	c.cpMu.Lock()
	c.closed = true
	c.cpMu.Unlock()
	c.stop()
	c.cpWG.Wait()
}
