package nfsfront

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	nfs "github.com/willscott/go-nfs"
)

// Options are a server's settings.
type Options struct {
	// UID and GID are the caller the tree sees in every request (NFSv3
	// clients state theirs with AUTH_SYS, unverified; the tree's own
	// owner is the one that counts).
	UID, GID uint32
	// Umask is the mask the mount applies to modes; READDIRPLUS
	// attributes get it here (LOOKUP and GETATTR come masked).
	Umask uint32
	// Logger receives go-nfs's warnings and errors.
	Logger *slog.Logger
	// Writable lets clients change the tree (where the tree allows it: an
	// inbox); otherwise every change is NFS3ERR_ROFS.
	Writable bool
	// HandleJournal is the file that keeps the handles given to clients
	// across restarts ("": none; a restarted server then answers a
	// client's old handles with NFS3ERR_STALE).
	HandleJournal string
	// Settle is how long a file written over NFS stays open after its
	// last WRITE before it is closed (and, under a final name in an
	// inbox, committed). Default DefaultSettle.
	Settle time.Duration
}

// DefaultSettle is Options.Settle's default: longer than the gap between
// a client's WRITEs of one file, short enough that a copy's version
// appears while its user looks.
const DefaultSettle = 3 * time.Second

// Server is a running NFS server.
type Server struct {
	l       net.Listener
	fs      *FS
	handles *handles
	done    chan struct{}
	err     error // set before done is closed
	close   sync.Once
}

// Serve serves raw over NFSv3 (with MOUNT on the same port) on l until
// Close.
func Serve(l net.Listener, raw fuse.RawFileSystem, opts Options) *Server {
	if opts.Logger != nil {
		setLogger(opts.Logger)
	}
	f := newFS(raw, opts)
	hs := newHandles(opts.HandleJournal, opts.Logger)
	s := &Server{l: l, fs: f, handles: hs, done: make(chan struct{})}
	srv := &nfs.Server{Handler: newHandler(f, hs), Context: context.Background()}
	go func() {
		defer close(s.done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, net.ErrClosed) {
			s.err = fmt.Errorf("nfs server on %s: %w", l.Addr(), err)
		}
	}()
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Wait blocks until the server has stopped, and returns why if it failed.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Close stops accepting connections and releases what the server holds
// of the tree (open files, lookups). Connections already accepted are
// left to end with their clients.
func (s *Server) Close() error {
	s.close.Do(func() {
		s.l.Close()
		<-s.done
		s.fs.close()
		s.handles.close()
	})
	return s.err
}
