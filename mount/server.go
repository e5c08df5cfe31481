package mount

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/inbox"
	"github.com/deltafs/deltafs/nodes"
	"github.com/deltafs/deltafs/serve"
	"github.com/deltafs/deltafs/writeback"
)

// Server is a running mount. Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	front  frontEnd // the FUSE mount or the NFS server
	cache  *blobcache.Cache
	stats  *metrics
	caches *delta.Caches // the tables' snapshots, states and parsed commits
	start  time.Time
	tables []*mountedTable
	dirs   []*nodes.TableDir
	files  []*serve.Table // the tables' data file servers, closed before the cache
	// served are the tables' data file servers' memory (verdicts, footer
	// patches, copies), this mount's alone, freed once they are closed.
	served *serve.Caches
	env    *nodes.Env
	// inboxEnv and inboxes are the tables' inboxes (inboxes[i] is
	// dirs[i]'s); nil on a read-only mount.
	inboxEnv *inbox.Env
	inboxes  []*inbox.Inbox
	// staging holds the inbox's staged files, removed at unmount; ""
	// for a read-only mount (no inbox).
	staging string
	// committers are the tables' inbox committers, closed (their
	// background checkpoints stopped) when the mount ends.
	committers []*writeback.Committer
	// verdicts keeps the verdicts of stored files across mounts (nil when
	// the journal cannot be opened: footers are read again).
	verdicts *serve.VerdictJournal

	stop     context.CancelFunc // stops the refresh loop
	loopDone chan struct{}
	waitOnce sync.Once
	waited   chan struct{} // closed once the mount is gone and resources freed
}

// maxRequest is the largest FUSE read (and write) request: 1 MiB, which
// the kernel grants here (max_pages_limit 256) and which halves the round
// trips of sequential reads.
const maxRequest = 1 << 20

// Mount resolves cfg's sources, mounts them at cfg.Mountpoint and returns
// once the kernel serves the mount. A table that cannot be read does not
// fail the mount: its directory holds _deltafs_error.txt. A source that
// cannot be opened, or holds no table, does. Unless cfg.ReadOnly,
// each table has an inbox/ whose files are staged under cfg.CacheDir and
// appended by a writeback.Committer when closed (see inbox.File).
func Mount(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Mountpoint == "" {
		return nil, fmt.Errorf("no mountpoint")
	}
	s, root, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := s.fuseOptions()
	srv, err := mountTimed(s.cfg.Mountpoint, withUmask(fs.NewNodeFS(root, opts), s.cfg.Umask), &opts.MountOptions, s.stats)
	if err != nil {
		s.release()
		return nil, fmt.Errorf("mount %s: %w", s.cfg.Mountpoint, err)
	}
	s.front = fuseFront{srv, s.cfg.Mountpoint}
	s.raiseReadAhead()
	s.learnMountID()
	s.env.SetDirectIO(srv.KernelSettings().Flags64()&fuse.CAP_DIRECT_IO_ALLOW_MMAP != 0)
	s.startRefresh()
	return s, nil
}

// open resolves cfg's sources and builds the tree, its caches and
// inboxes: everything a front end serves.
func open(ctx context.Context, cfg Config) (*Server, *nodes.RootDir, error) {
	uidSet, gidSet := cfg.UID != 0, cfg.GID != 0 // before withDefaults names the caller
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	tables, err := resolveSources(ctx, cfg.Sources)
	if err != nil {
		return nil, nil, err
	}
	cache, err := blobcache.New(blobcache.Options{MemoryBytes: cfg.MemoryCacheSize, DiskDir: cfg.CacheDir, DiskBytes: cfg.CacheSize, Headroom: inboxHeadroom(cfg), Logger: cfg.Logger})
	if err != nil {
		closeTables(tables)
		return nil, nil, fmt.Errorf("cache: %w", err)
	}
	caches := delta.NewCaches(cfg.SnapshotCacheSize)
	s := &Server{cfg: cfg, cache: cache, caches: caches, served: serve.NewCaches(), stats: newMetrics(cache, caches), start: time.Now(), tables: tables, loopDone: make(chan struct{}), waited: make(chan struct{})}
	if s.verdicts, err = serve.OpenVerdictJournal(filepath.Join(cfg.CacheDir, verdictJournal), cfg.Logger); err != nil {
		cfg.Logger.Warn("deltafs: verdict journal unavailable; a new mount reads every footer again", "err", err)
	}
	instrumentTables(tables, s.stats, caches)
	root := s.buildTree(ctx, uidSet, gidSet)
	s.stats.watchMemory(s.served, s.env)
	root.EnableStatus(s.mountStatus)
	if !cfg.ReadOnly {
		if s.staging, err = s.enableInboxes(); err != nil {
			s.release()
			return nil, nil, err
		}
	}
	return s, root, nil
}

// verdictJournal is the file under the cache dir that keeps the verdicts of
// stored files across mounts (serve.VerdictJournal).
const verdictJournal = "verdicts.journal"

// release frees what open built, for a front end that failed to start.
func (s *Server) release() {
	for _, c := range s.committers {
		c.Close()
	}
	for _, f := range s.files {
		f.Close() // their background work writes to the cache
	}
	s.served.Close()
	if s.env != nil {
		s.env.Close()
	}
	if s.verdicts != nil {
		s.verdicts.Close()
	}
	s.removeStaging()
	s.cache.Close()
	closeTables(s.tables)
}

// startRefresh starts following the tables' new commits.
func (s *Server) startRefresh() {
	loopCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.refreshLoop(loopCtx)
}

// buildTree creates the table directories and reads each table's newest
// version once (up to refreshWorkers at a time), logging the tables that
// are refused. uidSet and gidSet say whether the user named the owner
// and group (see mirrorPerms).
func (s *Server) buildTree(ctx context.Context, uidSet, gidSet bool) *nodes.RootDir {
	s.env = nodes.NewEnv(nodes.Options{
		UID:          s.cfg.UID,
		GID:          s.cfg.GID,
		Passthrough:  !s.cfg.NoPassthrough,
		XAttrs:       s.cfg.XAttrs,
		ShortTimeout: s.cfg.Refresh,
		Logger:       s.cfg.Logger,
		Observer:     s.stats,
		// The plans of @changes ranges: an eighth of the snapshot cache's
		// budget, as its parsed commits.
		RangePlanBytes: s.caches.Usage().Budget / 8,
	})
	for _, t := range s.tables {
		files := serve.NewTable(t.name, t.store, s.cache, serve.Options{Logger: s.cfg.Logger, Observe: s.stats.materialization, PartitionsInFiles: s.cfg.PartitionColumns, Verdicts: s.verdicts, Caches: s.served})
		s.files = append(s.files, files)
		d := nodes.NewTableDir(s.env, t.name, t.table, files)
		s.mirrorPerms(d, files, uidSet, gidSet)
		s.dirs = append(s.dirs, d)
	}
	errs := make([]error, len(s.dirs))
	forEachBounded(len(s.dirs), refreshWorkers, func(i int) { _, errs[i] = s.dirs[i].Refresh(ctx) })
	for i, d := range s.dirs {
		if errs[i] != nil {
			s.cfg.Logger.Warn("deltafs: table refused", "table", d.Name(), "location", s.tables[i].store.String(), "err", errs[i])
		}
		s.stats.setTable(d)
	}
	return nodes.NewRoot(s.dirs)
}

func (s *Server) fuseOptions() *fs.Options {
	short := s.cfg.Refresh
	mo := fuse.MountOptions{
		AllowOther:    s.cfg.AllowOther,
		FsName:        "deltafs",
		Name:          "deltafs",
		MaxWrite:      maxRequest,
		MaxReadAhead:  maxRequest,
		DisableSplice: true,
		DisableXAttrs: !s.cfg.XAttrs,
		// With xattrs on, ls -l asks every file for system.posix_acl_access
		// (and security.selinux): with kernel ACL support the kernel asks the
		// mount once per inode and caches the answer (no ACL), which took a
		// warm ls -lR of 10,000 files from 0.47 s to 0.29 s here. Without
		// xattrs every getxattr is ENOSYS, which the kernel remembers.
		EnableAcl: s.cfg.XAttrs,
		// The kernel keeps symlink targets: without it every path through
		// @latest costs a READLINK (ls -lR @latest/ of 10,000 files made
		// 20,000 a run). @latest's target is invalidated when it moves
		// (nodes.TableDir.Invalidate); @<time> links name their version in
		// their inode number.
		EnableSymlinkCaching: true,
		DirectMount:          os.Geteuid() == 0,
		// Rewritten files are opened with FOPEN_DIRECT_IO (nodes.DataFile.Open);
		// this keeps mmap of them working (Linux >= 6.6; older kernels ignore it).
		// READDIRPLUS_AUTO: the kernel asks for READDIRPLUS (entries with
		// attributes) for a directory's first chunk, then only while the
		// entries it returned are being used (ls -l stats each chunk as
		// it reads it), so a plain ls or find of a long history costs no
		// attributes beyond the first chunk (nodes.versionStream).
		ExtraCapabilities: fuse.CAP_DIRECT_IO_ALLOW_MMAP | fuse.CAP_READDIRPLUS_AUTO,
		Debug:             s.cfg.Debug,
	}
	if !s.cfg.Debug { // --debug keeps go-fuse's request trace on stderr
		mo.Logger = fuseLogger(s.cfg.Logger)
	}
	// The kernel checks permissions against the modes, uid and gid the
	// mount reports: with allow_other, only the owner may use the inbox.
	mo.Options = append(mo.Options, "default_permissions")
	if s.cfg.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	}
	if s.cfg.Umask&0o777 != 0 {
		// READDIRPLUS replies carry modes withUmask cannot reach.
		mo.DisableReadDirPlus = true
	}
	return &fs.Options{
		MountOptions: mo,
		EntryTimeout: &short,
		AttrTimeout:  &short,
		// No UID or GID here: the tree reports every owner itself
		// (nodes.Options.UID, GID, and the sources' with MirrorPerms),
		// where go-fuse would replace a mirrored root (0) by the mount's.
	}
}

// refreshLoop asks every table for new commits each cfg.Refresh, up to
// refreshWorkers tables at once (see refresher), and tells the kernel
// when @latest or a listing moved.
func (s *Server) refreshLoop(ctx context.Context) {
	defer close(s.loopDone)
	tick := time.NewTicker(s.cfg.Refresh)
	defer tick.Stop()
	lastErr := make([]string, len(s.dirs)) // last refresh error per table, logged once; each its table's worker's
	for i, d := range s.dirs {
		if err := d.Err(); err != nil {
			lastErr[i] = err.Error() // logged by buildTree
		}
	}
	r := refresher{n: len(s.dirs), workers: refreshWorkers, fn: func(ctx context.Context, i int) {
		s.refreshTable(ctx, i, &lastErr[i])
	}}
	r.run(ctx, tick.C)
}

// refreshTable refreshes one table, bounded by a timeout.
func (s *Server) refreshTable(ctx context.Context, i int, lastErr *string) {
	d := s.dirs[i]
	rctx, cancel := context.WithTimeout(ctx, max(10*s.cfg.Refresh, 30*time.Second))
	changed, err := d.Refresh(rctx)
	cancel()
	if changed {
		d.Invalidate()
	}
	s.stats.setTable(d) // also after commits, which refresh d themselves
	if s.inboxes != nil {
		s.inboxes[i].Sweep(time.Now())
	}
	s.logRefresh(d.Name(), err, lastErr)
}

// logRefresh logs a refresh error once, not on every tick.
func (s *Server) logRefresh(table string, err error, last *string) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == *last {
		return
	}
	if err != nil && !errorsIsCanceled(err) {
		s.cfg.Logger.Warn("deltafs: refresh failed", "table", table, "err", err)
	} else if *last != "" {
		s.cfg.Logger.Info("deltafs: table readable again", "table", table)
	}
	*last = msg
}

// Tables returns the names of the mounted tables, refused ones included.
func (s *Server) Tables() []string {
	out := make([]string, len(s.dirs))
	for i, d := range s.dirs {
		out[i] = d.Name()
	}
	return out
}

// Refused returns the tables that cannot be read, with the reason.
func (s *Server) Refused() map[string]error {
	out := map[string]error{}
	for _, d := range s.dirs {
		if err := d.Err(); err != nil {
			out[d.Name()] = err
		}
	}
	return out
}

// Wait blocks until the mount is gone (Unmount, fusermount3 -u, umount),
// then stops the refresh loop and closes the caches and stores.
func (s *Server) Wait() {
	s.front.wait()
	s.waitOnce.Do(func() {
		s.stop()
		<-s.loopDone
		for _, c := range s.committers {
			c.Close()
		}
		for _, f := range s.files {
			f.Close() // their background work writes to the cache
		}
		s.served.Close()
		if s.env != nil {
			s.env.Close()
		}
		if s.verdicts != nil {
			s.verdicts.Close()
		}
		s.cache.Close()
		closeTables(s.tables)
		for _, in := range s.inboxes {
			in.LogDropped()
		}
		s.removeStaging()
		close(s.waited)
	})
	<-s.waited
}

// Unmount unmounts cleanly (it fails, with the mount kept, while files
// are open: EBUSY) and releases everything, as Wait.
func (s *Server) Unmount() error {
	if err := s.front.stop(); err != nil {
		return err
	}
	s.Wait()
	return nil
}

func errorsIsCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// removeStaging deletes the mount's staged inbox files: what was not
// committed by unmount is dropped (files still open keep the mount busy).
func (s *Server) removeStaging() {
	if s.staging == "" {
		return
	}
	if err := os.RemoveAll(s.staging); err != nil {
		s.cfg.Logger.Warn("deltafs: remove inbox staging", "dir", s.staging, "err", err)
	}
}

// fuseLogger is go-fuse's logger: its lines go to the mount's log as
// warnings, except the read error that ends every mount detached lazily
// while files were open (ECONNABORTED, "software caused connection
// abort"), which is expected and logged at debug level: cmd/deltafs has
// already said the mount was detached.
func fuseLogger(l *slog.Logger) *log.Logger {
	return log.New(fuseLogWriter{l}, "", 0)
}

type fuseLogWriter struct{ l *slog.Logger }

func (w fuseLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "Failed to read from fuse conn") && strings.Contains(msg, "connection abort") {
		level = slog.LevelDebug
	}
	w.l.Log(context.Background(), level, "deltafs: fuse: "+msg)
	return len(p), nil
}
