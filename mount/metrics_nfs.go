package mount

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/deltafs/deltafs/nfsfront"
)

// nfsMetrics are the NFS server's own metrics (each NFS request also
// counts as the FUSE requests it becomes, in deltafs_fuse_*), registered
// when the mount serves NFS.
type nfsMetrics struct {
	duration *prometheus.HistogramVec // proc
	errors   *prometheus.CounterVec   // proc, status
	conns    prometheus.Gauge
}

var _ nfsfront.Observer = (*nfsMetrics)(nil)

// nfs registers the NFS server's metrics.
func (m *metrics) nfs() *nfsMetrics {
	f := promFactory{m.reg}
	n := &nfsMetrics{
		duration: f.histVec("deltafs_nfs_request_duration_seconds", "Time to answer NFS and MOUNT calls, by procedure.",
			prometheus.ExponentialBuckets(100e-6, 4, 10), "proc"),
		errors: f.counterVec("deltafs_nfs_errors_total", "NFS and MOUNT calls answered with an error status (NFS3ERR_NOENT included), by procedure and status.", "proc", "status"),
		conns:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "deltafs_nfs_connections", Help: "Open NFS client connections."}),
	}
	m.reg.MustRegister(n.conns)
	return n
}

// Request implements nfsfront.Observer.
func (n *nfsMetrics) Request(proc, status string, d time.Duration) {
	n.duration.WithLabelValues(proc).Observe(d.Seconds())
	if status != "ok" {
		n.errors.WithLabelValues(proc, status).Inc()
	}
}

// Connections implements nfsfront.Observer.
func (n *nfsMetrics) Connections(c int) { n.conns.Set(float64(c)) }
