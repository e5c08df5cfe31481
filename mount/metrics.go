package mount

import (
	"errors"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/nodes"
	"github.com/deltafs/deltafs/serve"
	"github.com/deltafs/deltafs/writeback"
)

// metrics are one mount's Prometheus metrics, in a registry of their own
// (so that two mounts in one process, as in tests, do not collide). Every
// method is safe for concurrent use.
type metrics struct {
	reg *prometheus.Registry

	fuseDuration  *prometheus.HistogramVec // op
	fuseErrors    *prometheus.CounterVec   // op, errno
	bytesServed   prometheus.Counter
	opens         *prometheus.CounterVec   // path: passthrough or userspace
	materialized  *prometheus.CounterVec   // result
	materialDur   prometheus.Histogram     // successful builds
	materialBytes prometheus.Counter       // bytes written by builds
	storageDur    *prometheus.HistogramVec // op
	storageErrors *prometheus.CounterVec   // op
	commits       *prometheus.CounterVec   // table
	conflicts     *prometheus.CounterVec   // table
	failures      *prometheus.CounterVec   // op, errno (nodes' errors)
	inboxRefusals *prometheus.CounterVec   // op, errno
	tableVersion  *prometheus.GaugeVec     // table
	tableRefused  *prometheus.GaugeVec     // table
}

// newMetrics registers the mount's metrics, reading cache counters from
// cache at each scrape.
func newMetrics(cache *blobcache.Cache, caches *delta.Caches) *metrics {
	buckets := prometheus.ExponentialBuckets(100e-6, 4, 10) // 100µs .. 26s
	m := &metrics{reg: prometheus.NewRegistry()}
	f := promFactory{m.reg}
	m.fuseDuration = f.histVec("deltafs_fuse_request_duration_seconds", "Time to answer FUSE requests, by operation.", buckets, "op")
	m.fuseErrors = f.counterVec("deltafs_fuse_errors_total", "FUSE requests answered with an error, by operation and errno (ENOENT included).", "op", "errno")
	m.bytesServed = f.counter("deltafs_served_bytes_total", "Bytes of data files served by userspace reads (reads through kernel passthrough are not seen).")
	m.opens = f.counterVec("deltafs_file_opens_total", "Data files opened, by how reads are served: passthrough (kernel reads the local file) or userspace.", "path")
	m.materialized = f.counterVec("deltafs_materializations_total", "Data files rewritten into the disk cache (deletion vectors applied, columns renamed), by result.", "result")
	m.materialDur = f.hist("deltafs_materialization_duration_seconds", "Time to rewrite one data file.", buckets)
	m.materialBytes = f.counter("deltafs_materialized_bytes_total", "Bytes of rewritten files written into the disk cache.")
	m.storageDur = f.histVec("deltafs_storage_request_duration_seconds", "Time of requests to table storage made by the log engine and commits, by operation.", buckets, "op")
	m.storageErrors = f.counterVec("deltafs_storage_errors_total", "Failed requests to table storage (a missing object or a lost race excluded), by operation.", "op")
	m.commits = f.counterVec("deltafs_commits_total", "Versions committed by this mount (inbox appends), by table.", "table")
	m.conflicts = f.counterVec("deltafs_commit_conflicts_total", "Commit attempts that lost the race for a version to another writer (then retried), by table.", "table")
	m.failures = f.counterVec("deltafs_errors_total", "Operations that failed with an error logged by deltafs (EIO, EOPNOTSUPP, ...), by operation and errno.", "op", "errno")
	m.inboxRefusals = f.counterVec("deltafs_inbox_refusals_total", "Inbox files or names refused (EINVAL: invalid file, EROFS: table not writable), by operation and errno.", "op", "errno")
	m.tableVersion = f.gaugeVec("deltafs_table_version", "Newest version of each table seen by the mount (-1 while refused).", "table")
	m.tableRefused = f.gaugeVec("deltafs_table_refused", "1 while a table cannot be read (see its _deltafs_error.txt), else 0.", "table")
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_snapshot_cache_bytes", Help: "Estimated heap bytes of the snapshots and table states kept (bounded by --snapshot-cache)."},
			func() float64 { return float64(caches.Usage().StateBytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_snapshot_cache_entries", Help: "Snapshots and table states kept."},
			func() float64 { return float64(caches.Usage().States) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_commit_cache_bytes", Help: "Estimated heap bytes of the parsed commit files kept (an eighth of --snapshot-cache)."},
			func() float64 { return float64(caches.Usage().CommitBytes) }),
	)
	m.reg.MustRegister(cacheCollector{cache}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchMemory registers the gauges of the mount's own memory beside the
// snapshot cache: its serve caches and its @changes plans.
func (m *metrics) watchMemory(served *serve.Caches, env *nodes.Env) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_verdicts", Help: "Stored files whose way of being served (as stored, or rewritten and its size) is kept (at most 1 Mi, ~48 bytes each)."},
			func() float64 { return float64(served.Usage().Verdicts) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_footer_patch_bytes", Help: "Estimated heap bytes of the footer-only rewrites kept (at most 64 MiB)."},
			func() float64 { return float64(served.Usage().PatchBytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_changes_plan_bytes", Help: "Estimated heap bytes of the plans of @changes ranges kept (an eighth of --snapshot-cache)."},
			func() float64 { return float64(env.PlanUsage().Bytes) }),
	)
}

// handler serves the registry in the Prometheus exposition format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// setTable records a table's state after a refresh.
func (m *metrics) setTable(d *nodes.TableDir) {
	version, ok := d.Version()
	if !ok {
		m.tableVersion.WithLabelValues(d.Name()).Set(-1)
		m.tableRefused.WithLabelValues(d.Name()).Set(1)
		return
	}
	m.tableVersion.WithLabelValues(d.Name()).Set(float64(version))
	m.tableRefused.WithLabelValues(d.Name()).Set(0)
}

// Failed implements nodes.Observer.
func (m *metrics) Failed(op string, errno syscall.Errno, refused bool) {
	if refused {
		m.inboxRefusals.WithLabelValues(op, nodes.ErrnoName(errno)).Inc()
		return
	}
	m.failures.WithLabelValues(op, nodes.ErrnoName(errno)).Inc()
}

var _ nodes.Observer = (*metrics)(nil)

// materialization records one rewrite of a data file.
func (m *metrics) materialization(took time.Duration, bytes int64, err error) {
	if err != nil {
		m.materialized.WithLabelValues("error").Inc()
		return
	}
	m.materialized.WithLabelValues("ok").Inc()
	m.materialDur.Observe(took.Seconds())
	m.materialBytes.Add(float64(bytes))
}

// storageRequest records one request of the log engine or a commit.
func (m *metrics) storageRequest(op string, start time.Time, err error) {
	m.storageDur.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, delta.ErrNotExist) && !errors.Is(err, delta.ErrExists) {
		m.storageErrors.WithLabelValues(op).Inc()
	}
}

// committerHooks are the writeback.Options hooks that count a table's
// commits and lost commit races.
func (m *metrics) committerHooks(table string, opts writeback.Options) writeback.Options {
	opts.OnCommit = func(int64) { m.commits.WithLabelValues(table).Inc() }
	opts.OnConflict = func(int64) { m.conflicts.WithLabelValues(table).Inc() }
	return opts
}

// cacheCollector exposes blobcache.Cache.Stats at each scrape.
type cacheCollector struct{ cache *blobcache.Cache }

var cacheDescs = []struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(blobcache.Stats) int64
}{
	{cacheDesc("cache_hits_total", "Blocks of remote data files found in the memory cache."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.Hits }},
	{cacheDesc("cache_misses_total", "Blocks of remote data files fetched or waited for."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.Misses }},
	{cacheDesc("cache_fetches_total", "Ranged reads issued to object storage for data files."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.Fetches }},
	{cacheDesc("cache_readahead_fetches_total", "Fetches issued by read-ahead."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.ReadAheadFetches }},
	{cacheDesc("cache_fetched_bytes_total", "Bytes received from object storage for data files."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.BytesFetched }},
	{cacheDesc("cache_evictions_total", "Blocks dropped from the memory cache."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.Evictions }},
	{cacheDesc("cache_memory_bytes", "Bytes of blocks held in the memory cache."), prometheus.GaugeValue, func(s blobcache.Stats) int64 { return s.MemoryBytes }},
	{cacheDesc("cache_disk_builds_total", "Derived files built into the disk cache (successfully or not)."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.Builds }},
	{cacheDesc("cache_disk_evictions_total", "Derived files deleted from the disk cache to respect --cache-size."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.DiskEvictions }},
	{cacheDesc("cache_disk_damaged_total", "Disk cache files found damaged or changed on disk (then discarded and built again)."), prometheus.CounterValue, func(s blobcache.Stats) int64 { return s.DiskDamaged }},
	{cacheDesc("cache_disk_bytes", "Bytes of derived files in the disk cache."), prometheus.GaugeValue, func(s blobcache.Stats) int64 { return s.DiskBytes }},
}

func cacheDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("deltafs_"+name, help, nil, nil)
}

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range cacheDescs {
		ch <- d.desc
	}
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.cache.Stats()
	for _, d := range cacheDescs {
		ch <- prometheus.MustNewConstMetric(d.desc, d.kind, float64(d.value(s)))
	}
}

// promFactory registers metrics on one registry.
type promFactory struct{ reg *prometheus.Registry }

func (f promFactory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f promFactory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f promFactory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f promFactory) hist(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f promFactory) histVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
