package fs

import (
	"io"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
)

// MetricsHandler serves the mount's Prometheus metrics (exposition
// format): FUSE request latencies and errors, bytes served, data file
// opens, materializations, storage requests, commits and conflicts,
// inbox refusals, table versions and the cache counters.
func (s *Server) MetricsHandler() http.Handler { return s.stats.handler() }

// SnapshotCacheUsage reports what the tables' snapshot cache holds.
func (s *Server) SnapshotCacheUsage() delta.CacheUsage { return s.caches.Usage() }

// mountStatus is the "mount" member of the status file.
type mountStatus struct {
	Mountpoint string           `json:"mountpoint"`
	PID        int              `json:"pid"`
	Started    time.Time        `json:"started"`
	ReadOnly   bool             `json:"readOnly"`
	Refresh    string           `json:"refresh"`
	Cache      cacheStatus      `json:"cache"`
	Snapshots  delta.CacheUsage `json:"snapshotCache"`
	Sources    []string         `json:"sources"`
	Stats      blobcache.Stats  `json:"cacheStats"`
}

// cacheStatus is the cache's configuration and use.
type cacheStatus struct {
	Dir             string `json:"dir"`
	DiskBytes       int64  `json:"diskBytes"`
	DiskLimit       int64  `json:"diskLimit"`
	MemoryBytes     int64  `json:"memoryBytes"`
	MemoryLimit     int64  `json:"memoryLimit"`
	HitRatioPercent int64  `json:"hitRatioPercent"`
}

// mountStatus reports the mount-wide state for the status file.
func (s *Server) mountStatus() any {
	st := s.cache.Stats()
	mem := s.cfg.MemoryCacheSize
	if mem <= 0 {
		mem = blobcache.DefaultMemoryBytes
	}
	ratio := int64(0)
	if st.Hits+st.Misses > 0 {
		ratio = 100 * st.Hits / (st.Hits + st.Misses)
	}
	out := mountStatus{
		Mountpoint: s.cfg.Mountpoint, PID: os.Getpid(), Started: s.start.UTC(),
		ReadOnly: s.cfg.ReadOnly, Refresh: s.cfg.Refresh.String(), Stats: st,
		Snapshots: s.caches.Usage(),
		Cache: cacheStatus{Dir: s.cfg.CacheDir, DiskBytes: st.DiskBytes, DiskLimit: s.cfg.CacheSize,
			MemoryBytes: st.MemoryBytes, MemoryLimit: mem, HitRatioPercent: ratio},
	}
	for _, t := range s.tables {
		out.Sources = append(out.Sources, t.name+"="+t.store.String())
	}
	return out
}

// progressAfter is how long a materialization runs before it is logged
// at info level, and the period of its progress lines.
const progressAfter = 2 * time.Second

// progress wraps the build of a rewritten file: long builds are logged
// (start, progress every progressAfter, end with sizes and time) and
// every build is counted in the metrics.
func (m *materializer) progress(table string, snap *delta.Snapshot, f *delta.LiveFile, build func(io.Writer) error) func(io.Writer) error {
	return func(w io.Writer) error {
		attrs := []any{"table", table, "version", snap.Version(), "file", f.Key, "stored_bytes", f.Add.Size}
		if dv := f.Add.DeletionVector; dv != nil {
			attrs = append(attrs, "deleted_rows", dv.Cardinality)
		}
		attrs = slices.Clip(attrs) // appends below copy: the progress goroutine shares attrs
		m.log.Debug("deltafs: materialize", attrs...)
		start := time.Now()
		cw := &countingWriter{w: w}
		done := make(chan struct{})
		go m.logProgress(attrs, start, cw, done)
		err := build(cw)
		close(done)
		took := time.Since(start)
		m.stats.materialization(took, cw.n.Load(), err)
		end := append(attrs, "written_bytes", cw.n.Load(), "took", took.Round(time.Millisecond))
		switch {
		case err != nil:
			m.log.Warn("deltafs: materialize failed", append(end, "err", err)...)
		case took >= progressAfter:
			m.log.Info("deltafs: materialized", end...)
		default:
			m.log.Debug("deltafs: materialized", end...)
		}
		return err
	}
}

// logProgress logs a build still running every progressAfter until done.
func (m *materializer) logProgress(attrs []any, start time.Time, cw *countingWriter, done <-chan struct{}) {
	tick := time.NewTicker(progressAfter)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			m.log.Info("deltafs: materializing", append(attrs, "written_bytes", cw.n.Load(),
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
