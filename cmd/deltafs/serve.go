package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/deltafs/deltafs/mount"
)

const serveNFSHelp = `Serve Delta tables over NFSv3 (with MOUNT on the same TCP port, export /),
for machines without FUSE: the OS's own NFS client mounts them. The tree is
the one 'deltafs mount' serves (tables, @latest, @vN, @<time>, data files with
deleted rows removed, _history.jsonl, inbox/), byte for byte.

Appends: NFS has no close, so a file written into inbox/ commits
  - when renamed from a temporary name to a final one (cp to .x.tmp, then mv
    to x.parquet; rsync does this): the rename's answer is the commit's;
  - under a final name, once no write or commit came for --settle (default 3s): the
    client was answered before; the outcome is in inbox/_status.jsonl.
A directory renamed in is one version, as on a FUSE mount.

SOURCE and the flags are those of 'deltafs mount' (see 'deltafs mount
--help'); flags about the kernel mount (--allow-other, --no-passthrough,
--xattrs, --debug, --daemon) have no effect here.

NFSv3 has no authentication: a client states its own user (AUTH_SYS), and
anyone who reaches the port reads every table. The server listens on
127.0.0.1 unless --addr names another address, which then needs --allow
with the client addresses or networks that may connect.

Mount it (port 2049 as below):
  Linux:  mount -t nfs -o vers=3,tcp,port=2049,mountport=2049,nolock 127.0.0.1:/ /mnt/delta
  macOS:  mount_nfs -o vers=3,tcp,port=2049,mountport=2049,nolocks,locallocks 127.0.0.1:/ /mnt/delta

Examples:
  deltafs serve nfs ./warehouse
  deltafs serve nfs --addr 127.0.0.1:12049 orders=s3://bucket/orders
  deltafs serve nfs --addr 0.0.0.0:2049 --allow 10.0.0.0/8,192.168.1.20 /data/warehouse
`

// runServe runs 'deltafs serve nfs'.
func runServe(ctx context.Context, args []string) error {
	flags := newFlags("serve nfs", "SOURCE...", serveNFSHelp)
	var f mountFlags
	f.define(flags)
	addr := flags.String("addr", "127.0.0.1:2049", "listen on `HOST:PORT` (a port of 0 picks a free one)")
	settle := flags.Duration("settle", 0, "how long a file written under its final name in an inbox stays open after its last write before it commits (`DURATION`, default 3s)")
	allow := flags.String("allow", "", "client `ADDRESSES`: IPs and CIDR networks, comma-separated, that may connect (needed for a non-loopback --addr; 0.0.0.0/0,::/0 for anyone)")
	switch {
	case len(args) > 0 && args[0] == "nfs":
		args = args[1:]
	case len(args) == 0 || !slices.Contains([]string{"-h", "-help", "--help"}, args[0]):
		return usageError(flags, "the only protocol served is nfs: deltafs serve nfs SOURCE...")
	}
	pos, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	var sources []mount.Source
	if f.configFile != "" {
		mf, err := loadMountFile(f.configFile, flags)
		if err != nil {
			return err
		}
		if err := applySettings(flags, mf.settings, setFlags(flags)); err != nil {
			return err
		}
		sources = mf.tables
	}
	if len(pos) > 0 {
		sources = nil
		for _, arg := range pos {
			sources = append(sources, parseSource(arg))
		}
	}
	if len(sources) == 0 {
		return usageError(flags, "want SOURCE..., or --config FILE with tables")
	}
	nets, err := allowedClients(*addr, *allow)
	if err != nil {
		return usageError(flags, "%v", err)
	}
	cfg, err := f.config(sources, "")
	if err != nil {
		return err
	}
	cfg.NFSSettle = *settle
	return serveNFS(ctx, cfg, &f, *addr, nets)
}

// allowedClients returns the networks that may connect to a server on
// addr: none named means loopback only, which a non-loopback addr refuses.
func allowedClients(addr, allow string) ([]netip.Prefix, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %v", addr, err)
	}
	var nets []netip.Prefix
	for _, s := range strings.Split(allow, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("--allow %q: not an IP address or CIDR network", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		nets = append(nets, p.Masked())
	}
	if len(nets) > 0 {
		return nets, nil
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--addr %s is not a loopback address: NFSv3 has no authentication, so name the clients that may connect with --allow", addr)
	}
	return loopbackNets(), nil
}

// loopbackNets are the loopback networks, the clients allowed by default.
func loopbackNets() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// serveNFS serves cfg's tables on addr until ctx ends (a signal).
func serveNFS(ctx context.Context, cfg mount.Config, f *mountFlags, addr string, nets []netip.Prefix) error {
	out, closeLog, err := openLog(f.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	cfg.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: levelOf(f.logLevel)}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	metrics, err := listenMetrics(f.metricsAddr)
	if err != nil {
		l.Close()
		return err
	}
	srv, err := mount.ServeNFS(ctx, cfg, &allowListener{Listener: l, nets: nets, log: cfg.Logger})
	if err != nil {
		l.Close()
		closeListener(metrics)
		return err
	}
	stopMetrics := serveMetrics(metrics, srv, cfg.Logger)
	defer stopMetrics()
	mode := "appends through inbox/"
	if cfg.ReadOnly {
		mode = "read-only"
	}
	fmt.Fprintf(out, "deltafs: serving %s over NFSv3 at %s (%s), clients %s\n",
		tablesCount(len(srv.Tables())), srv.Addr(), mode, prefixesString(nets))
	for name, err := range srv.Refused() {
		fmt.Fprintf(out, "deltafs: table %s refused: %v\n", name, firstLine(err))
	}
	<-ctx.Done()
	err = srv.Unmount()
	fmt.Fprintf(out, "deltafs: stopped serving %s\n", srv.Addr())
	return err
}

func prefixesString(nets []netip.Prefix) string {
	s := make([]string, len(nets))
	for i, p := range nets {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// allowListener accepts connections from the allowed networks only; the
// others are closed at once, each refused address logged once.
type allowListener struct {
	net.Listener
	nets []netip.Prefix
	log  *slog.Logger

	mu      sync.Mutex
	refused map[netip.Addr]bool // guarded by mu (at most maxRefusedLogged)
}

const maxRefusedLogged = 1024

func (l *allowListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, perr := netip.ParseAddrPort(c.RemoteAddr().String())
		if perr == nil && l.allowed(ap.Addr().Unmap()) {
			return c, nil
		}
		c.Close()
		l.logRefused(ap.Addr(), c.RemoteAddr().String())
	}
}

func (l *allowListener) allowed(a netip.Addr) bool {
	for _, p := range l.nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (l *allowListener) logRefused(a netip.Addr, remote string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refused == nil {
		l.refused = map[netip.Addr]bool{}
	}
	if l.refused[a] || len(l.refused) >= maxRefusedLogged {
		return
	}
	l.refused[a] = true
	l.log.Warn("deltafs: nfs: connection refused: client not in --allow", "client", remote)
}
