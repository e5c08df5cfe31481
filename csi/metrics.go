package csi

// The plugin's metrics: its own counters, and each volume's, scraped from
// the Unix socket on which that volume's mount process serves them.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// MetricsSocket is where the process of the volume whose directory is dir
// serves its metrics (a Unix socket, `deltafs mount --metrics-addr unix:PATH`).
func MetricsSocket(dir string) string { return filepath.Join(dir, "metrics.sock") }

// metrics are the plugin's own counters; the handler adds every served
// volume's metrics, each labelled with its volume id.
type metrics struct {
	d        *Driver
	reg      *prometheus.Registry
	scraper  *http.Client // one for every volume's socket; its idle connections are bounded
	publish  *prometheus.CounterVec
	unpub    *prometheus.CounterVec
	volumes  prometheus.GaugeFunc
	unserved prometheus.GaugeFunc
}

func newMetrics(d *Driver) *metrics {
	m := &metrics{d: d, reg: prometheus.NewRegistry(), scraper: newScraper(d)}
	m.publish = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "deltafs_csi_publish_total",
		Help: "NodePublishVolume calls that mounted (result ok) or failed (error)"}, []string{"result"})
	m.unpub = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "deltafs_csi_unpublish_total",
		Help: "NodeUnpublishVolume calls that unmounted (ok) or failed (error)"}, []string{"result"})
	m.volumes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_csi_volumes",
		Help: "published targets on this node"}, func() float64 { n, _ := m.count(); return float64(n) })
	m.unserved = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "deltafs_csi_volumes_lost",
		Help: "published targets whose process is gone (reads fail with ENOTCONN or ECONNABORTED until unpublished)"},
		func() float64 { _, n := m.count(); return float64(n) })
	m.reg.MustRegister(m.publish, m.unpub, m.volumes, m.unserved)
	return m
}

// count counts the records and those whose process is gone.
func (m *metrics) count() (all, lost int) {
	recs, _ := m.d.records()
	for _, r := range recs {
		if !m.d.opts.Mounter.Alive(r.PID, r.Target) {
			lost++
		}
	}
	return len(recs), lost
}

func (m *metrics) published(err error)   { m.publish.WithLabelValues(result(err)).Inc() }
func (m *metrics) unpublished(err error) { m.unpub.WithLabelValues(result(err)).Inc() }

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// MetricsHandler serves the plugin's metrics and, labelled volume="ID",
// the metrics of every volume it serves (read from each volume process's
// socket at every scrape).
func (d *Driver) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fams, err := d.metrics.reg.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		byName := map[string]*dto.MetricFamily{}
		for _, f := range fams {
			byName[f.GetName()] = f
		}
		recs, _ := d.records()
		for _, rec := range recs {
			vf, err := d.metrics.scrape(r.Context(), targetKey(rec.Target))
			if err != nil {
				d.log.Debug("csi: volume metrics", "volume", rec.VolumeID, "err", err)
				continue
			}
			merge(byName, vf, rec.VolumeID)
		}
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, n := range names {
			if err := enc.Encode(byName[n]); err != nil {
				return
			}
		}
	})
}

// merge adds every metric of fams to byName, labelled volume=id.
func merge(byName map[string]*dto.MetricFamily, fams map[string]*dto.MetricFamily, id string) {
	for name, f := range fams {
		for _, m := range f.Metric {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("volume"), Value: proto.String(id)})
		}
		if have, ok := byName[name]; ok && have.GetType() == f.GetType() {
			have.Metric = append(have.Metric, f.Metric...)
			continue
		}
		byName[name] = f
	}
}

// newScraper returns the client that reads the volumes' metrics: the
// host of a request's URL is a target's key, dialled at that volume's
// metrics socket. It keeps at most one idle connection per volume, for
// 30 s, and at most scrapeIdle in all; a scrape takes at most 5 s.
func newScraper(d *Driver) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			key, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", MetricsSocket(filepath.Join(d.opts.StateDir, "volumes", key)))
		},
		MaxIdleConns: scrapeIdle, MaxIdleConnsPerHost: 1, IdleConnTimeout: 30 * time.Second,
	}}
}

// scrapeIdle bounds the scraper's idle connections, all volumes together.
const scrapeIdle = 64

// scrape reads the metrics of the volume whose target has key.
func (m *metrics) scrape(ctx context.Context, key string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+key+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.scraper.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("volume %s: %s", key, resp.Status)
	}
	var p expfmt.TextParser
	return p.TextToMetricFamilies(resp.Body)
}
