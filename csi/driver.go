// Package csi is deltafs's Kubernetes CSI node plugin: the Identity and
// Node services over gRPC. It is a thin front end: it checks requests,
// keeps one record per published target and hands the mount itself to a
// Mounter (cmd/deltafs runs `deltafs mount` as one process per published
// volume). It knows nothing of Delta, FUSE or caches.
//
// Lock order: Driver.mu guards only the in-flight set and is never held
// across a Mounter call; a target is worked on by one request at a time
// (others get ABORTED, as the spec asks).
package csi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// DefaultName is the driver's name, as a CSIDriver object and a
// PersistentVolume's spec.csi.driver name it.
const DefaultName = "csi.deltafs.io"

// DefaultPodsDir is the kubelet's pods directory, under which it asks for
// every target path.
const DefaultPodsDir = "/var/lib/kubelet/pods"

// Mounter serves volumes: cmd/deltafs implements it with one `deltafs
// mount` process per published target.
type Mounter interface {
	// Mount serves v at v.Target and returns once the kernel serves it,
	// with the pid of the process serving it. Errors wrap ErrInvalid
	// (bad volume attributes: nothing was started) or ErrUnreadable (the
	// source is not a readable table: nothing is mounted).
	Mount(ctx context.Context, v *Volume) (pid int, err error)
	// Mounted reports whether a deltafs mount (serving or dead) is at target.
	Mounted(target string) (bool, error)
	// Unmount detaches target (if mounted) and returns once the process
	// pid (0: none known) has exited, ending it past a deadline.
	Unmount(ctx context.Context, target string, pid int) error
	// Alive reports whether pid is a live process serving target.
	Alive(pid int, target string) bool
}

// Errors a Mounter wraps, mapped to the spec's codes.
var (
	// ErrInvalid marks a volume whose attributes or secrets are wrong
	// (INVALID_ARGUMENT).
	ErrInvalid = errors.New("invalid volume")
	// ErrUnreadable marks a source that is not a readable table
	// (NOT_FOUND): missing, no _delta_log, refused credentials, a log
	// deltafs cannot read.
	ErrUnreadable = errors.New("source is not a readable table")
)

// Options configure a Driver.
type Options struct {
	Name     string // DefaultName if ""
	NodeID   string
	Version  string
	StateDir string // one record per published target, and each volume's files
	// PodsDir is the kubelet's pods directory: every target a request
	// names must lie under it (DefaultPodsDir if "").
	PodsDir string
	Mounter Mounter
	Logger  *slog.Logger
}

// Driver serves the Identity and Node services.
type Driver struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedNodeServer
	opts    Options
	log     *slog.Logger
	metrics *metrics

	mu       sync.Mutex
	inFlight map[string]bool // targets being published or unpublished; under mu
}

// New returns a Driver and reports the volumes published before it
// started (by an earlier plugin process): each is logged as still served
// or as lost (its process gone: reads there fail with ENOTCONN or ECONNABORTED until it
// is unpublished).
func New(opts Options) (*Driver, error) {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.PodsDir == "" {
		opts.PodsDir = DefaultPodsDir
	}
	opts.PodsDir = filepath.Clean(opts.PodsDir)
	if opts.NodeID == "" {
		return nil, errors.New("csi: no node id")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Join(opts.StateDir, "volumes"), 0o700); err != nil {
		return nil, fmt.Errorf("csi: state dir: %w", err)
	}
	d := &Driver{opts: opts, log: opts.Logger, inFlight: map[string]bool{}}
	d.metrics = newMetrics(d)
	d.recover()
	return d, nil
}

// recover logs what the records of an earlier plugin say.
func (d *Driver) recover() {
	recs, err := d.records()
	if err != nil {
		d.log.Error("csi: read volume records", "dir", d.opts.StateDir, "err", err)
	}
	for _, r := range recs {
		if d.opts.Mounter.Alive(r.PID, r.Target) {
			d.log.Info("csi: volume still served", "volume", r.VolumeID, "target", r.Target, "pid", r.PID)
			continue
		}
		d.log.Error("csi: volume lost its server: reads at its target fail (ENOTCONN, ECONNABORTED) until it is published again and its pods restarted",
			"volume", r.VolumeID, "target", r.Target, "pid", r.PID)
	}
}

// Serve serves gRPC on endpoint (unix:///path or unix:/path; a stale
// socket file is replaced) until ctx ends.
func (d *Driver) Serve(ctx context.Context, endpoint string) error {
	path, err := socketPath(endpoint)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("csi: remove stale socket: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("csi: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("csi: %w", err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(d.logCalls))
	csipb.RegisterIdentityServer(s, d)
	csipb.RegisterNodeServer(s, d)
	go func() { <-ctx.Done(); s.GracefulStop() }()
	d.log.Info("csi: serving", "endpoint", endpoint, "node", d.opts.NodeID, "driver", d.opts.Name)
	return s.Serve(l)
}

// socketPath is the file of a unix:// endpoint.
func socketPath(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" {
		return "", fmt.Errorf("csi: endpoint %q: want unix:///path/to/csi.sock", endpoint)
	}
	p := u.Path
	if p == "" {
		p = u.Opaque
	}
	if u.Host != "" { // unix://relative/path
		p = u.Host + p
	}
	if p == "" {
		return "", fmt.Errorf("csi: endpoint %q names no socket", endpoint)
	}
	return p, nil
}

// logCalls logs failed calls with their method (the handlers log what
// they did, naming the volume).
func (d *Driver) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		d.log.Warn("csi: call failed", "method", info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:], "err", err)
	}
	return resp, err
}

// begin marks target busy; false if a request is already working on it.
func (d *Driver) begin(target string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inFlight[target] {
		return false
	}
	d.inFlight[target] = true
	return true
}

func (d *Driver) end(target string) {
	d.mu.Lock()
	delete(d.inFlight, target)
	d.mu.Unlock()
}
