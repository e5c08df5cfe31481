package integration

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"

	"github.com/deltafs/deltafs/internal/testkit/nfsdial"
	"github.com/deltafs/deltafs/internal/testkit/scalegen"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// serveNFS serves cfg over NFS on a loopback port (its CacheDir defaults
// to a fresh temp dir), stopped when the test ends, and returns a client
// of the export (the user-space client: this kernel has no NFS client).
func serveNFS(t *testing.T, cfg mount.Config) *nfsc.Target {
	t.Helper()
	v, _ := serveNFSStoppable(t, cfg)
	return v
}

// serveNFSStoppable is serveNFS, with a function that stops the server
// (and closes the client) before the test ends.
func serveNFSStoppable(t *testing.T, cfg mount.Config) (*nfsc.Target, func()) {
	t.Helper()
	v, _, stop := serveNFSServer(t, cfg)
	return v, stop
}

// serveNFSServer is serveNFSStoppable with the server (its metrics,
// status).
func serveNFSServer(t *testing.T, cfg mount.Config) (*nfsc.Target, *mount.Server, func()) {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mount.ServeNFS(context.Background(), cfg, l)
	if err != nil {
		t.Fatalf("serve nfs: %v", err)
	}
	c, err := nfsdial.Dial(srv.Addr())
	if err != nil {
		srv.Unmount()
		t.Fatal(err)
	}
	v, err := (&nfsc.Mount{Client: c}).Mount("/", rpc.AuthNull)
	if err != nil {
		c.Close()
		srv.Unmount()
		t.Fatalf("mount /: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			v.Close()
			if err := srv.Unmount(); err != nil {
				t.Errorf("stop nfs server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return v, srv, stop
}

// journalFlushWait is longer than nfsfront's journal flush period.
const journalFlushWait = 200 * time.Millisecond

// seen is what a walk saw of one path.
type seen struct {
	kind  string // "dir", "file", "link"
	size  int64  // files
	ino   uint64
	mtime int64  // seconds
	link  string // link target
	sum   string // files: sha256 of the bytes, or the read error
}

func (s seen) String() string {
	return fmt.Sprintf("%s size=%d ino=%d mtime=%d link=%q sum=%.16s", s.kind, s.size, s.ino, s.mtime, s.link, s.sum)
}

func sumOf(r io.Reader) string {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "error"
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// walkFUSE records every path below mnt, not following links.
func walkFUSE(t *testing.T, mnt string) map[string]seen {
	out := map[string]seen{}
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s := seen{ino: fi.Sys().(*syscall.Stat_t).Ino, mtime: fi.ModTime().Unix()}
		switch {
		case d.IsDir():
			s.kind = "dir"
		case fi.Mode()&os.ModeSymlink != 0:
			s.kind = "link"
			s.link, _ = os.Readlink(p)
		default:
			s.kind, s.size = "file", fi.Size()
			if f, err := os.Open(p); err != nil {
				s.sum = "error"
			} else {
				s.sum = sumOf(f)
				f.Close()
			}
		}
		out[filepath.ToSlash(rel)] = s
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", mnt, err)
	}
	return out
}

// walkNFS records every path below dir of the export, as walkFUSE.
func walkNFS(t *testing.T, v *nfsc.Target, dir string, out map[string]seen) {
	entries, err := v.ReadDirPlus(dir)
	if err != nil {
		t.Fatalf("nfs readdirplus %q: %v", dir, err)
	}
	for _, e := range entries {
		if e.Name() == "." || e.Name() == ".." {
			continue
		}
		p := path.Join(dir, e.Name())
		a := e.Attr.Attr
		if !e.Attr.IsSet {
			fa, _, err := v.Lookup(p)
			if err != nil {
				t.Fatalf("nfs lookup %q: %v", p, err)
			}
			a = *fa.(*nfsc.Fattr)
		}
		s := seen{ino: a.Fileid, mtime: int64(a.Mtime.Seconds)}
		switch a.Type {
		case nfsc.NF3Dir:
			s.kind = "dir"
			walkNFS(t, v, p, out)
		case nfsc.NF3Lnk:
			s.kind = "link"
			if f, err := v.Open(p); err == nil {
				s.link, _ = f.Readlink()
				f.Close()
			}
		default:
			s.kind, s.size = "file", int64(a.Filesize)
			if f, err := v.Open(p); err != nil {
				s.sum = "error"
			} else {
				s.sum = sumOf(f)
				f.Close()
			}
		}
		out[p] = s
	}
}

// The NFS server serves the FUSE mount's tree: every shared fixture with
// expected content, mounted and served with the same configuration, has
// the same names, kinds, sizes, inode numbers, modification times, link
// targets and bytes everywhere (every version of every table, DV'd and
// column-mapped files rewritten, _history.jsonl, status files), but for
// the root's status file, which describes its own front end.
func TestNFSServesTheMountsTree(t *testing.T) {
	testenv.RequireFUSE(t)
	tables := conformanceTables(t)
	names := slices.Sorted(maps.Keys(tables))
	var cfg mount.Config
	for i, name := range names {
		cfg.Sources = append(cfg.Sources, mount.Source{Name: fmt.Sprintf("t%03d", i), URL: testenv.Fixture(t, name)})
	}
	cfg.ReadOnly = true
	fuseSeen := walkFUSE(t, mountFS(t, cfg))
	nfsSeen := map[string]seen{}
	walkNFS(t, serveNFS(t, cfg), "", nfsSeen)

	files, diffs := 0, 0
	for p, f := range fuseSeen {
		n, ok := nfsSeen[p]
		if p == ".deltafs-status.json" {
			if !ok {
				t.Errorf("%s: not served over NFS", p)
			}
			continue
		}
		if f.kind == "file" {
			files++
		}
		if !ok || n != f {
			if diffs++; diffs <= 20 {
				t.Errorf("%s:\n  fuse %v\n  nfs  %v (listed: %v)", p, f, n, ok)
			}
		}
	}
	for p := range nfsSeen {
		if _, ok := fuseSeen[p]; !ok {
			if diffs++; diffs <= 20 {
				t.Errorf("%s: served over NFS, not in the FUSE mount", p)
			}
		}
	}
	if diffs > 20 {
		t.Errorf("... %d differences in all", diffs)
	}
	if files < 500 || !strings.Contains(fmt.Sprint(slices.Collect(maps.Keys(fuseSeen))), "@v") {
		t.Errorf("only %d files compared", files)
	}
	t.Logf("%d paths, %d files compared over %d tables", len(fuseSeen), files, len(names))
}

// A file the tree cannot serve (its deletion vector gone) is listed and
// looked up with a size over NFS, as over FUSE, and its READ fails with
// NFS3ERR_IO (not a permission error), its reason in the mount's status.
func TestNFSUnservableFileIsIOError(t *testing.T) {
	root := copyWithoutDVs(t)
	snap := latestSnapshot(t, root)
	dvd := ""
	for _, f := range liveFiles(t, snap) {
		if f.Add.DeletionVector != nil {
			dvd = f.Key
			break
		}
	}
	if dvd == "" {
		t.Fatal("no live file with a deletion vector")
	}
	v := serveNFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, ReadOnly: true})
	p := "t/@latest/" + dvd
	p = strings.Replace(p, "@latest", fmt.Sprintf("@v%d", snap.Version()), 1)
	fi, _, err := v.Lookup(p)
	if err != nil || fi.Size() <= 0 {
		t.Fatalf("lookup %s: %v, %v; want its size", p, fi, err)
	}
	f, err := v.Open(p)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer f.Close()
	_, err = io.ReadAll(f)
	var nerr *nfsc.Error
	if !errors.As(err, &nerr) || nerr.ErrorNum != nfsc.NFS3ErrIO {
		t.Errorf("read %s: %v, want NFS3ERR_IO", p, err)
	}
}

// Handles survive a restart of the server with the same cache dir: a
// client's handle of a data file from the first run reads the same
// attributes from the second; with another cache dir it is stale.
func TestNFSHandlesSurviveRestart(t *testing.T) {
	table := testenv.Fixture(t, fixtureDV)
	cache := t.TempDir()
	cfg := mount.Config{Sources: []mount.Source{{Name: "t", URL: table}}, ReadOnly: true, CacheDir: cache}
	first, stop := serveNFSStoppable(t, cfg)
	entries, err := first.ReadDirPlus("t/@v1")
	if err != nil {
		t.Fatal(err)
	}
	var fh []byte
	var want *nfsc.Fattr
	for _, e := range entries {
		if e.Name() == "." || e.Name() == ".." || !e.Handle.IsSet {
			continue
		}
		fh, want = e.Handle.FH, &e.Attr.Attr
		break
	}
	if fh == nil {
		t.Fatal("no entry with a handle in t/@v1")
	}
	stop()
	time.Sleep(2 * journalFlushWait)

	second := serveNFS(t, cfg)
	got, err := second.GetAttr(fh)
	if err != nil {
		t.Fatalf("GETATTR of a handle from before the restart: %v", err)
	}
	if got.Fileid != want.Fileid || got.Filesize != want.Filesize {
		t.Errorf("after the restart: ino %d size %d, before ino %d size %d", got.Fileid, got.Filesize, want.Fileid, want.Filesize)
	}
	cfg.CacheDir = t.TempDir()
	other := serveNFS(t, cfg)
	if _, err := other.GetAttr(fh); err == nil {
		t.Error("a server without the journal knew the handle")
	}
}

// A table of 3,000 versions is listed over NFS page by page, streamed
// from the tree (each page continues the last one's directory stream):
// the same entries, with the same inode numbers and times, as the FUSE
// mount lists.
func TestNFSListsLargeDirectoriesInPages(t *testing.T) {
	testenv.RequireFUSE(t)
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: 3000, FilesPerCommit: 1, CheckpointEvery: 1000, ICT: true}); err != nil {
		t.Fatal(err)
	}
	cfg := mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, ReadOnly: true}
	fuseDir := filepath.Join(mountFS(t, cfg), "t")
	ents, err := os.ReadDir(fuseDir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(fuseDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		want[e.Name()] = fmt.Sprintf("ino %d mtime %d", st.Ino, fi.ModTime().Unix())
	}
	v := serveNFS(t, cfg)
	list, err := v.ReadDirPlus("t")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range list {
		if e.Name() == "." || e.Name() == ".." {
			continue
		}
		if _, dup := got[e.Name()]; dup {
			t.Errorf("%s listed twice", e.Name())
		}
		got[e.Name()] = fmt.Sprintf("ino %d mtime %d", e.Attr.Attr.Fileid, e.ModTime().Unix())
	}
	// A page asked again from the same cookie (its stream went on) seeks
	// a new stream there and lists the same entries.
	_, fh, err := v.Lookup("t")
	if err != nil {
		t.Fatal(err)
	}
	first := nfsDirPage(t, v, fh, 0, 0)
	mid := first.cookies[len(first.cookies)-1]
	a, b := nfsDirPage(t, v, fh, mid, first.verf), nfsDirPage(t, v, fh, mid, first.verf)
	if len(a.names) == 0 || !slices.Equal(a.names, b.names) || !slices.Equal(a.cookies, b.cookies) {
		t.Errorf("pages from cookie %d: %q then %q", mid, a.names, b.names)
	}
	if len(want) < 3000 || !maps.Equal(got, want) {
		diffs := 0
		for name, w := range want {
			if got[name] != w && diffs < 5 {
				t.Errorf("%s: nfs %q, fuse %q", name, got[name], w)
				diffs++
			}
		}
		t.Errorf("NFS listed %d entries, FUSE %d", len(got), len(want))
	}
}

// nfsPage is one READDIRPLUS reply.
type nfsPage struct {
	names   []string
	cookies []uint64
	verf    uint64
}

// nfsDirPage asks one READDIRPLUS page of 4 KiB of directory fh from
// cookie.
func nfsDirPage(t *testing.T, v *nfsc.Target, fh []byte, cookie, verf uint64) nfsPage {
	t.Helper()
	type args struct {
		rpc.Header
		FH                 []byte
		Cookie, CookieVerf uint64
		DirCount, MaxCount uint32
	}
	type entry struct {
		IsSet bool           `xdr:"union"`
		Entry nfsc.EntryPlus `xdr:"unioncase=1"`
	}
	res, err := v.Call(&args{Header: rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: nfsc.NFSProc3ReadDirPlus, Cred: rpc.AuthNull, Verf: rpc.AuthNull},
		FH: fh, Cookie: cookie, CookieVerf: verf, DirCount: 512, MaxCount: 4096})
	if err != nil {
		t.Fatalf("READDIRPLUS at cookie %d: %v", cookie, err)
	}
	if st, err := xdr.ReadUint32(res); err != nil || st != 0 {
		t.Fatalf("READDIRPLUS at cookie %d: status %d, %v", cookie, st, err)
	}
	var head struct {
		DirAttrs   nfsc.PostOpAttr
		CookieVerf uint64
	}
	if err := xdr.Read(res, &head); err != nil {
		t.Fatal(err)
	}
	pg := nfsPage{verf: head.CookieVerf}
	for {
		var e entry
		if err := xdr.Read(res, &e); err != nil {
			t.Fatal(err)
		}
		if !e.IsSet {
			return pg
		}
		pg.names, pg.cookies = append(pg.names, e.Entry.FileName), append(pg.cookies, e.Entry.Cookie)
	}
}

// The NFS server's metrics count calls by procedure and status, and its
// connections, beside the FUSE requests the calls become.
func TestNFSMetrics(t *testing.T) {
	v, srv, _ := serveNFSServer(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: testenv.Fixture(t, fixturePartitioned)}}, ReadOnly: true})
	before := metricValue(t, srv, `deltafs_nfs_request_duration_seconds_count\{proc="lookup"\}`)
	if _, _, err := v.Lookup("t/no-such-version"); err == nil {
		t.Fatal("lookup of a missing name: no error")
	}
	if _, err := v.ReadDirPlus("t"); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, srv, `deltafs_nfs_request_duration_seconds_count\{proc="lookup"\}`); got <= before {
		t.Errorf("lookups counted %d, %d before", got, before)
	}
	if got := metricValue(t, srv, `deltafs_nfs_errors_total\{proc="lookup",status="NFS3ERR_NOENT"\}`); got < 1 {
		t.Errorf("NFS3ERR_NOENT lookups counted %d, want at least 1", got)
	}
	if got := metricValue(t, srv, `deltafs_nfs_request_duration_seconds_count\{proc="readdirplus"\}`); got < 1 {
		t.Errorf("READDIRPLUS calls counted %d", got)
	}
	if got := metricValue(t, srv, `deltafs_nfs_connections`); got != 1 {
		t.Errorf("%d connections, want 1", got)
	}
	if got := metricValue(t, srv, `deltafs_fuse_request_duration_seconds_count\{op="readdirplus"\}`); got < 1 {
		t.Errorf("the calls' FUSE requests: %d READDIRPLUS counted", got)
	}
}
