package mount

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/nfsfront"
)

// frontEnd is how the tree is served: a FUSE mount or an NFS server.
type frontEnd interface {
	// wait blocks until the front end has stopped (an unmount, a closed
	// server).
	wait()
	// stop stops it: for FUSE a clean unmount (EBUSY while files are
	// open, the mount kept).
	stop() error
}

type fuseFront struct {
	srv *fuse.Server
	dir string
}

func (f fuseFront) wait() { f.srv.Wait() }

func (f fuseFront) stop() error {
	if err := f.srv.Unmount(); err != nil {
		return fmt.Errorf("unmount %s: %w", f.dir, err)
	}
	return nil
}

type nfsFront struct{ srv *nfsfront.Server }

func (n nfsFront) wait() { n.srv.Wait() }

func (n nfsFront) stop() error { return n.srv.Close() }

// nfsHandleJournal is the file under the cache dir that keeps the NFS
// handles given to clients across restarts.
const nfsHandleJournal = "nfs-handles.journal"

// ServeNFS resolves cfg's sources as Mount does and serves the same tree
// over NFSv3 on l (cfg.Mountpoint unused) until Unmount. Every request
// goes through the same file system the FUSE mount runs (nodes' tree, the
// umask, the metrics), translated by package nfsfront; unless
// cfg.ReadOnly, files written into an inbox are committed as there (see
// nfsfront's write.go for when a file written over NFS is closed).
func ServeNFS(ctx context.Context, cfg Config, l net.Listener) (*Server, error) {
	s, root, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := s.fuseOptions()
	raw := &timedFS{RawFileSystem: withUmask(fs.NewNodeFS(root, opts), s.cfg.Umask), m: s.stats}
	srv := nfsfront.Serve(l, raw, nfsfront.Options{UID: s.cfg.UID, GID: s.cfg.GID, Umask: s.cfg.Umask, Logger: s.cfg.Logger,
		Writable: !s.cfg.ReadOnly, Settle: s.cfg.NFSSettle, HandleJournal: filepath.Join(s.cfg.CacheDir, nfsHandleJournal),
		Observer: s.stats.nfs()})
	s.front = nfsFront{srv}
	s.startRefresh()
	return s, nil
}

// Addr is the address an NFS server listens on ("" for a FUSE mount).
func (s *Server) Addr() string {
	if n, ok := s.front.(nfsFront); ok {
		return n.srv.Addr().String()
	}
	return ""
}
