package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/deltafs/deltafs/csi"
)

const csiHelp = `Serve the Kubernetes CSI node plugin (Identity and Node services) on a
Unix socket: NodePublishVolume mounts a volume's tables at the pod's
target path, NodeUnpublishVolume unmounts them. Each published target is
served by its own 'deltafs mount' process (its own session, credentials,
caches, status file and metrics), which outlives a restart of the plugin
process: the next plugin finds it in --state-dir and unpublishes it.

Volume attributes (a PersistentVolume's spec.csi.volumeAttributes):
  source           [NAME=]URL of a table or warehouse, as 'deltafs mount' takes it
  config           a mount config file's YAML (tables: and mount flags) instead of source
  nodeCredentials  "true": the volume may read with the node's own cloud identity
  and these mount flags, by name: %s
Object-store credentials come from the Secret named by nodePublishSecretRef
(keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ..., see docs/kubernetes.md).

Examples:
  deltafs csi --endpoint unix:///csi/csi.sock --node-id "$NODE_NAME"
  deltafs csi --endpoint unix:///csi/csi.sock --node-id n1 --metrics-addr :9464
`

func runCSI(ctx context.Context, args []string) error {
	flags := newFlags("csi", "", fmt.Sprintf(csiHelp, volumeFlagList()))
	endpoint := flags.String("endpoint", "unix:///csi/csi.sock", "gRPC `ENDPOINT` (unix:///path/csi.sock)")
	nodeID := flags.String("node-id", "", "this node's `ID` (the Kubernetes node name)")
	name := flags.String("driver-name", csi.DefaultName, "the driver's `NAME`, as the CSIDriver object names it")
	stateDir := flags.String("state-dir", "/var/lib/deltafs-csi", "`DIR` keeping a record of each published target and its caches (keep it on the node, across plugin restarts)")
	podsDir := flags.String("pods-dir", csi.DefaultPodsDir, "the kubelet's pods `DIR`: a target path outside it is refused")
	metricsAddr := flags.String("metrics-addr", "", "serve the plugin's and every volume's Prometheus metrics at http://`ADDR`/metrics")
	logLevel := "info"
	flags.Var(checkedString{&logLevel, func(s string) error { var l slog.Level; return l.UnmarshalText([]byte(s)) }},
		"log-level", "`LEVEL`: debug, info, warn or error (the volumes' too, unless their log-level attribute says)")
	pos, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *nodeID == "" {
		return usageError(flags, "want --node-id ID and no arguments")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: levelOf(logLevel)}))
	d, err := csi.New(csi.Options{Name: *name, NodeID: *nodeID, Version: buildVersion().Version, StateDir: *stateDir, PodsDir: *podsDir,
		Mounter: &csiMounter{logLevel: logLevel, out: os.Stderr}, Logger: logger})
	if err != nil {
		return err
	}
	l, err := listenMetrics(*metricsAddr)
	if err != nil {
		return err
	}
	stop := serveHandler(l, d.MetricsHandler(), logger)
	defer stop()
	return d.Serve(ctx, *endpoint)
}

// volumeFlags are the mount flags a volume may set (as attributes or in
// its config): what concerns its own tables, caches and files. Flags
// about the process (logs, metrics, daemon, cache dir) are the plugin's.
var volumeFlags = []string{"cache-size", "memory-cache-size", "snapshot-cache", "validation-memory", "uid", "gid", "umask",
	"xattrs", "partition-columns", "refresh", "commit-timeout", "inbox-stale-after", "single-writer", "no-passthrough",
	"log-level", "max-parquet-footer", "max-parquet-columns"}

func volumeFlagList() string {
	s := ""
	for i, f := range volumeFlags {
		if i > 0 {
			s += ", "
		}
		s += f
	}
	return s
}

// errVolume is returned for attributes a volume may not set.
var errVolume = errors.New("not a volume attribute")

// mountFlagSet is a fresh set of the mount command's flags, which checks
// volume attributes exactly as `deltafs mount` checks its flags.
func mountFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	var f mountFlags
	f.define(fs)
	return fs
}
