package nfsfront

// Server: the listener, its connections, and Options.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
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
	// Logger receives the server's warnings and errors.
	Logger *slog.Logger
	// Writable lets clients change the tree (where the tree allows it: an
	// inbox); otherwise every change is NFS3ERR_ROFS.
	Writable bool
	// HandleJournal is the file that keeps the handles given to clients
	// across restarts ("": none; a restarted server then answers a
	// client's old handles with NFS3ERR_STALE).
	HandleJournal string
	// Settle is how long a file written over NFS stays open after its
	// last WRITE (or COMMIT) before it is closed (and, under a final name
	// in an inbox, committed). Default DefaultSettle.
	Settle time.Duration
	// Observer, when set, is told of every request and connection.
	Observer Observer
}

// DefaultSettle is Options.Settle's default: longer than the gap between
// a client's WRITEs of one file, short enough that a copy's version
// appears while its user looks.
const DefaultSettle = 3 * time.Second

// Server is a running NFSv3 server (with MOUNT on the same port).
type Server struct {
	l         net.Listener
	fs        *FS
	handles   *handles
	exclusive exclusives // verifiers of exclusive creates
	log       *slog.Logger
	obs       Observer // nil: none
	verf      [8]byte  // the write verifier: new at each start, so clients resend what was not committed

	mu    sync.Mutex
	conns map[*conn]struct{} // guarded by mu
	wg    sync.WaitGroup     // connections being served
	done  chan struct{}
	err   error // set before done is closed
	close sync.Once
}

// Serve serves raw over NFSv3 on l until Close.
func Serve(l net.Listener, raw fuse.RawFileSystem, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{l: l, fs: newFS(raw, opts), handles: newHandles(opts.HandleJournal, log), log: log, obs: opts.Observer,
		conns: map[*conn]struct{}{}, done: make(chan struct{})}
	rand.Read(s.verf[:])
	go s.accept()
	return s
}

func (s *Server) accept() {
	defer close(s.done)
	for {
		c, err := s.l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.err = fmt.Errorf("nfs server on %s: %w", s.l.Addr(), err)
			}
			return
		}
		cn := &conn{s: s, c: c, log: s.log}
		s.mu.Lock()
		s.conns[cn] = struct{}{}
		s.connectionsLocked()
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			cn.serve()
			s.mu.Lock()
			delete(s.conns, cn)
			s.connectionsLocked()
			s.mu.Unlock()
		}()
	}
}

// connectionsLocked tells the Observer how many connections are open.
func (s *Server) connectionsLocked() {
	if s.obs != nil {
		s.obs.Connections(len(s.conns))
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Wait blocks until the server has stopped, and returns why if it failed.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Close stops accepting connections, closes those open (their requests
// in progress finish first), and releases what the server holds of the
// tree (open files, lookups).
func (s *Server) Close() error {
	s.close.Do(func() {
		s.l.Close()
		<-s.done
		s.mu.Lock()
		for c := range s.conns {
			c.c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		s.fs.close()
		s.handles.close()
	})
	return s.err
}

// Reply buffers of READs (up to rtmax bytes of data) are reused: a
// megabyte allocated, zeroed and dropped per READ is most of a READ's
// cost otherwise.
var replyBufs = sync.Pool{New: func() any { return new([]byte) }}

func getBuf(n int) []byte {
	b := *replyBufs.Get().(*[]byte)
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}

func putBuf(b []byte) {
	if cap(b) >= 64<<10 {
		replyBufs.Put(&b)
	}
}
