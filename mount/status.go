package mount

import (
	"net/http"
	"os"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/nodes"
	"github.com/deltafs/deltafs/serve"
)

// MetricsHandler serves the mount's Prometheus metrics (exposition
// format): FUSE request latencies and errors, bytes served, data file
// opens, materializations, storage requests, commits and conflicts,
// inbox refusals, table versions and the cache counters.
func (s *Server) MetricsHandler() http.Handler { return s.stats.handler() }

// SnapshotCacheUsage reports what the tables' snapshot cache holds.
func (s *Server) SnapshotCacheUsage() delta.CacheUsage { return s.caches.Usage() }

// ServedCacheUsage reports what the tables' data file servers keep in
// memory (verdicts, footer patches, copies): this mount's alone, empty
// once it is unmounted.
func (s *Server) ServedCacheUsage() serve.CacheUsage { return s.served.Usage() }

// PlanUsage reports what the plans of @changes ranges hold: this mount's
// alone, none once it is unmounted.
func (s *Server) PlanUsage() nodes.PlanUsage { return s.env.PlanUsage() }

// MemoryBudgets reports the memory the mount's bounded caches count for
// now, for the process's memory limit (cmd/deltafs sets it to a fixed
// allowance plus this, every few seconds): the snapshot cache's states
// and parsed commits as held now, with an eighth more for what their
// estimate misses; the memory block cache at its bound when a table is
// in an object store (its blocks come and go faster than the limit
// follows) and nothing when every table is local (a local file is never
// read through it); the validation budget at its bound on a writable
// mount; the plans of @changes ranges and the footer patches kept, as held
// now. Each term is at most what its flag or budget allows.
func (s *Server) MemoryBudgets() int64 {
	u := s.caches.Usage()
	n := (u.StateBytes + u.CommitBytes) * 9 / 8
	for _, t := range s.tables {
		if delta.LocalDir(t.store) == "" {
			n += orDefault(s.cfg.MemoryCacheSize, blobcache.DefaultMemoryBytes)
			break
		}
	}
	if !s.cfg.ReadOnly {
		n += orDefault(s.cfg.ValidationMemory, DefaultValidationMemory)
	}
	n += s.env.PlanUsage().Bytes + s.served.Usage().PatchBytes
	return n
}

func orDefault(n, def int64) int64 {
	if n <= 0 {
		return def
	}
	return n
}

// mountStatus is the "mount" member of the status file.
type mountStatus struct {
	Mountpoint string           `json:"mountpoint,omitempty"`
	NFSAddress string           `json:"nfsAddress,omitempty"` // deltafs serve nfs: where it listens
	Volume     string           `json:"volume,omitempty"`
	PID        int              `json:"pid"`
	Started    time.Time        `json:"started"`
	ReadOnly   bool             `json:"readOnly"`
	Refresh    string           `json:"refresh"`
	Cache      cacheStatus      `json:"cache"`
	Snapshots  delta.CacheUsage `json:"snapshotCache"`
	Served     serve.CacheUsage `json:"servedCaches"` // verdicts, footer patches, copies
	Plans      nodes.PlanUsage  `json:"changesPlans"` // plans of @changes ranges
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
		Mountpoint: s.cfg.Mountpoint, NFSAddress: s.Addr(), Volume: s.cfg.Volume, PID: os.Getpid(), Started: s.start.UTC(),
		ReadOnly: s.cfg.ReadOnly, Refresh: s.cfg.Refresh.String(), Stats: st,
		Snapshots: s.caches.Usage(), Served: s.served.Usage(), Plans: s.env.PlanUsage(),
		Cache: cacheStatus{Dir: s.cfg.CacheDir, DiskBytes: st.DiskBytes, DiskLimit: s.cfg.CacheSize,
			MemoryBytes: st.MemoryBytes, MemoryLimit: mem, HitRatioPercent: ratio},
	}
	for _, t := range s.tables {
		out.Sources = append(out.Sources, t.name+"="+t.store.String())
	}
	return out
}
