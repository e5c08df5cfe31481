package serve

// Progress lines of a long materialization.

import (
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// progressAfter is how long a materialization runs before it is logged
// at info level, and the period of its progress lines.
const progressAfter = 2 * time.Second

// progress wraps the build of a rewritten file: long builds are logged
// (start, progress every progressAfter, end with sizes and time) and
// every build is told to Options.Observe.
func (t *Table) progress(snap *delta.Snapshot, f *delta.LiveFile, build func(io.Writer) error) func(io.Writer) error {
	return func(w io.Writer) error {
		attrs := []any{"table", t.name, "version", snap.Version(), "file", f.Key, "stored_bytes", f.Add.Size}
		if dv := f.Add.DeletionVector; dv != nil {
			attrs = append(attrs, "deleted_rows", dv.Cardinality)
		}
		attrs = slices.Clip(attrs) // appends below copy: the progress goroutine shares attrs
		t.log.Debug("deltafs: materialize", attrs...)
		start := time.Now()
		cw := &countingWriter{w: w}
		done := make(chan struct{})
		go t.logProgress(attrs, start, cw, done)
		err := build(cw)
		close(done)
		took := time.Since(start)
		if t.opts.Observe != nil {
			t.opts.Observe(took, cw.n.Load(), err)
		}
		end := append(attrs, "written_bytes", cw.n.Load(), "took", took.Round(time.Millisecond))
		switch {
		case err != nil:
			t.log.Warn("deltafs: materialize failed", append(end, "err", err)...)
		case took >= progressAfter:
			t.log.Info("deltafs: materialized", end...)
		default:
			t.log.Debug("deltafs: materialized", end...)
		}
		return err
	}
}

// logProgress logs a build still running every progressAfter until done.
func (t *Table) logProgress(attrs []any, start time.Time, cw *countingWriter, done <-chan struct{}) {
	tick := time.NewTicker(progressAfter)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			t.log.Info("deltafs: materializing", append(attrs, "written_bytes", cw.n.Load(),
				"elapsed", time.Since(start).Round(time.Second))...)
		}
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
