package integration

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// nfsWrite creates p over NFS and writes data in the client's WRITE
// sizes, then COMMITs (the client's close).
func nfsWrite(t *testing.T, v *nfsc.Target, p string, data []byte) {
	t.Helper()
	f, err := v.OpenFile(p, 0o644)
	if err != nil {
		t.Fatalf("create %s over NFS: %v", p, err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("write %s over NFS: %v", p, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("commit %s over NFS: %v", p, err)
	}
}

// nfsStatus reads inbox/_status.jsonl over NFS.
func nfsStatus(t *testing.T, v *nfsc.Target) []inboxEvent { return nfsTableStatus(t, v, "t") }

// nfsTableStatus is table's inbox/_status.jsonl read over NFS.
func nfsTableStatus(t *testing.T, v *nfsc.Target, table string) []inboxEvent {
	t.Helper()
	f, err := v.Open(table + "/inbox/_status.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return parseInboxStatus(t, data)
}

func lastNFSStatus(t *testing.T, v *nfsc.Target) inboxEvent {
	t.Helper()
	ev := nfsStatus(t, v)
	if len(ev) == 0 {
		t.Fatal("no status line")
	}
	return ev[len(ev)-1]
}

// Appends over NFS, as a FUSE mount's inbox takes them: a temporary name
// renamed to a final one commits in the RENAME (whose answer is the
// commit's); a file refused fails its RENAME and changes nothing; a
// directory renamed in is one version; a file written under its final
// name commits once quiet for the settle time; a write into a snapshot
// is refused.
func TestNFSInboxAppends(t *testing.T) {
	testenv.RequireFUSE(t) // the differential half of the suite mounts; this part only needs the tree
	root := testenv.CopyFixture(t, fixturePartitioned)
	v := serveNFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, NFSSettle: 300 * time.Millisecond})
	before := latestSnapshot(t, root)
	rows := func(i int64) []byte {
		return parquetBytes(t, []basicDataRow{{ptr(1000 + i), ptr(float64(i))}, {ptr(2000 + i), nil}})
	}

	t.Run("rename commits", func(t *testing.T) {
		if _, err := v.Mkdir("t/inbox/letter=zz", 0o755); err != nil {
			t.Fatalf("mkdir over NFS: %v", err)
		}
		nfsWrite(t, v, "t/inbox/letter=zz/.new.parquet.tmp", rows(1))
		checkUnchanged(t, root, before)
		if err := v.Rename("t/inbox/letter=zz/.new.parquet.tmp", "t/inbox/letter=zz/new.parquet"); err != nil {
			t.Fatalf("rename over NFS: %v", err)
		}
		// The rename was answered: the version exists.
		after := latestSnapshot(t, root)
		if after.Version() != before.Version()+1 || commitAdds(t, root, after.Version()) != 1 {
			t.Fatalf("after the rename: version %d, want %d with one add", after.Version(), before.Version()+1)
		}
		if e := lastNFSStatus(t, v); e.Version == nil || *e.Version != after.Version() {
			t.Errorf("last status %+v, want version %d", e, after.Version())
		}
		before = after
	})

	t.Run("refused rename", func(t *testing.T) {
		nfsWrite(t, v, "t/inbox/letter=zz/.bad.tmp", []byte("not parquet"))
		if err := v.Rename("t/inbox/letter=zz/.bad.tmp", "t/inbox/letter=zz/bad.parquet"); err == nil {
			t.Fatal("rename of a file that is not Parquet: no error")
		}
		checkUnchanged(t, root, before)
		if e := lastNFSStatus(t, v); e.Error == "" || e.Version != nil {
			t.Errorf("last status %+v, want the refusal", e)
		}
	})

	t.Run("batch", func(t *testing.T) {
		for _, d := range []string{"t/inbox/.b", "t/inbox/.b/letter=a", "t/inbox/.b/letter=b"} {
			if _, err := v.Mkdir(d, 0o755); err != nil {
				t.Fatalf("mkdir %s over NFS: %v", d, err)
			}
		}
		for i, p := range []string{"t/inbox/.b/letter=a/p1.parquet", "t/inbox/.b/letter=b/p2.parquet"} {
			nfsWrite(t, v, p, rows(int64(10+i)))
		}
		checkUnchanged(t, root, before)
		if err := v.Rename("t/inbox/.b", "t/inbox/b"); err != nil {
			t.Fatalf("rename of the batch over NFS: %v", err)
		}
		after := latestSnapshot(t, root)
		if after.Version() != before.Version()+1 || commitAdds(t, root, after.Version()) != 2 {
			t.Fatalf("after the batch: version %d, want %d with two adds", after.Version(), before.Version()+1)
		}
		before = after
	})

	t.Run("settle commits a final name", func(t *testing.T) {
		nfsWrite(t, v, "t/inbox/letter=zz/final.parquet", rows(3))
		var after int64
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if after = latestSnapshot(t, root).Version(); after > before.Version() {
				break
			}
		}
		if after != before.Version()+1 || commitAdds(t, root, after) != 1 {
			t.Fatalf("version %d after the settle time, want %d with one add", after, before.Version()+1)
		}
		// Nothing waits on a settled file's commit, so its status line
		// is written just after the version is: wait for it.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if e := lastNFSStatus(t, v); e.File == "letter=zz/final.parquet" {
				break
			}
		}
		if e := lastNFSStatus(t, v); e.Version == nil || *e.Version != after || e.File != "letter=zz/final.parquet" {
			t.Errorf("last status %+v, want letter=zz/final.parquet as version %d", e, after)
		}
		before = latestSnapshot(t, root)
	})

	t.Run("a client gone mid-write commits nothing", func(t *testing.T) {
		data := rows(5)
		f, err := v.OpenFile("t/inbox/letter=zz/cut.parquet", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data[:len(data)/2]); err != nil {
			t.Fatal(err)
		}
		// No more WRITE, no COMMIT: the client is gone. Once the settle
		// time has passed the file is closed, refused (not Parquet: cut),
		// and the table is unchanged.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if e := lastNFSStatus(t, v); e.File == "letter=zz/cut.parquet" {
				break
			}
		}
		if e := lastNFSStatus(t, v); e.File != "letter=zz/cut.parquet" || e.Error == "" || e.Version != nil {
			t.Errorf("last status %+v, want cut.parquet refused", e)
		}
		checkUnchanged(t, root, before)
	})

	t.Run("snapshots refuse writes", func(t *testing.T) {
		snap := fmt.Sprintf("t/@v%d", before.Version())
		if _, err := v.Create(snap+"/x.parquet", 0o644); err == nil {
			t.Error("create in a snapshot over NFS: no error")
		}
		entries, err := v.ReadDirPlus(snap + "/letter=a")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "." && e.Name() != ".." {
				if err := v.Remove(snap + "/letter=a/" + e.Name()); err == nil {
					t.Errorf("remove of %s in a snapshot over NFS: no error", e.Name())
				}
				break
			}
		}
		checkUnchanged(t, root, before)
	})
}

// A front end as a test script drives it.
type frontEnd interface {
	mkdir(p string) error
	write(p string, data []byte) error
	rename(from, to string) error
	status() []inboxEvent
}

type fuseFront struct {
	t   *testing.T
	dir string // MOUNTPOINT/t
}

func (f fuseFront) mkdir(p string) error { return os.Mkdir(filepath.Join(f.dir, p), 0o755) }
func (f fuseFront) write(p string, data []byte) error {
	return os.WriteFile(filepath.Join(f.dir, p), data, 0o644)
}
func (f fuseFront) rename(a, b string) error {
	return os.Rename(filepath.Join(f.dir, a), filepath.Join(f.dir, b))
}
func (f fuseFront) status() []inboxEvent { return inboxStatus(f.t, f.dir) }

type nfsFront struct {
	t     *testing.T
	v     *nfsc.Target
	table string
}

func (n nfsFront) mkdir(p string) error { _, err := n.v.Mkdir(n.table+"/"+p, 0o755); return err }
func (n nfsFront) write(p string, data []byte) error {
	f, err := n.v.OpenFile(n.table+"/"+p, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Close()
}
func (n nfsFront) rename(a, b string) error {
	return n.v.Rename(n.table+"/"+a, n.table+"/"+b)
}
func (n nfsFront) status() []inboxEvent { return nfsTableStatus(n.t, n.v, n.table) }

// The same appends through a FUSE mount and over NFS, each on its own
// copy of one table, end the same: the same versions with the same
// number of files each, the same refusals, the same status lines (file,
// version, refused or not), in the same order.
func TestNFSInboxMatchesFUSE(t *testing.T) {
	testenv.RequireFUSE(t)
	rows := func(i int64) []byte {
		return parquetBytes(t, []basicDataRow{{ptr(1000 + i), ptr(float64(i))}, {ptr(2000 + i), nil}})
	}
	type outcome struct {
		errs   []bool   // each step failed
		adds   []int    // adds of each new version
		status []string // file, version, refused
	}
	script := func(f frontEnd, root string, waitFor func(int64)) outcome {
		var o outcome
		before := latestSnapshot(t, root).Version()
		step := func(err error) { o.errs = append(o.errs, err != nil) }
		step(f.mkdir("inbox/letter=zz"))
		step(f.write("inbox/letter=zz/.a.parquet.tmp", rows(1)))
		step(f.rename("inbox/letter=zz/.a.parquet.tmp", "inbox/letter=zz/a.parquet"))
		step(f.write("inbox/letter=zz/.bad.tmp", []byte("not parquet")))
		step(f.rename("inbox/letter=zz/.bad.tmp", "inbox/letter=zz/bad.parquet"))
		step(f.mkdir("inbox/.b"))
		step(f.mkdir("inbox/.b/letter=a"))
		step(f.mkdir("inbox/.b/letter=b"))
		step(f.write("inbox/.b/letter=a/p1.parquet", rows(2)))
		step(f.write("inbox/.b/letter=b/p2.parquet", rows(3)))
		step(f.rename("inbox/.b", "inbox/b"))
		step(f.write("inbox/letter=zz/final.parquet", rows(4)))
		waitFor(before + 3)
		after := latestSnapshot(t, root).Version()
		for v := before + 1; v <= after; v++ {
			o.adds = append(o.adds, commitAdds(t, root, v))
		}
		for _, e := range f.status() {
			v := "-"
			if e.Version != nil {
				v = fmt.Sprint(*e.Version - before)
			}
			o.status = append(o.status, fmt.Sprintf("%s v+%s refused=%v", e.File, v, e.Error != ""))
		}
		return o
	}
	waitLatest := func(root string) func(int64) {
		return func(v int64) {
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && latestSnapshot(t, root).Version() < v; {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	fuseRoot, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	viaFUSE := script(fuseFront{t, tdir}, fuseRoot, waitLatest(fuseRoot))
	nfsRoot := testenv.CopyFixture(t, fixturePartitioned)
	v := serveNFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: nfsRoot}}, NFSSettle: 300 * time.Millisecond})
	viaNFS := script(nfsFront{t: t, v: v, table: "t"}, nfsRoot, waitLatest(nfsRoot))
	if fmt.Sprint(viaFUSE) != fmt.Sprint(viaNFS) {
		t.Errorf("outcomes differ:\n fuse %+v\n nfs  %+v", viaFUSE, viaNFS)
	}
	if len(viaFUSE.adds) != 3 || viaFUSE.adds[1] != 2 {
		t.Errorf("through FUSE: %+v, want 3 versions, the second with 2 files", viaFUSE)
	}
	t.Logf("both: %+v", viaNFS)
}

// nfsStatusOfErrno is the NFS status a FUSE mount's errno becomes over
// NFS (RFC 1813 nfsstat3), for the errnos making a link or node gives.
var nfsStatusOfErrno = map[syscall.Errno]uint32{
	syscall.EPERM: 1, syscall.EACCES: 13, syscall.EXDEV: 18, syscall.EINVAL: 22, syscall.EROFS: 30,
	syscall.EOPNOTSUPP: 10004, syscall.ENOSYS: 10004,
}

// Symbolic links, hard links and special files are made (or refused)
// by the tree over NFS as over FUSE: in a snapshot and in the inbox,
// SYMLINK, LINK and MKNOD get the status of the errno the FUSE mount's
// symlink(2), link(2) and mknod(2) get, and nothing is made.
func TestNFSLinksAndNodesAsFUSE(t *testing.T) {
	testenv.RequireFUSE(t)
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	before := latestSnapshot(t, root)
	snap := fmt.Sprintf("@v%d", before.Version())
	var file string // a data file of the snapshot, relative to the table
	for _, f := range liveFiles(t, before) {
		file = path.Join(snap, f.Key)
		break
	}
	errnoOf := func(err error) syscall.Errno {
		var e syscall.Errno
		if !errors.As(err, &e) {
			t.Fatalf("no errno: %v", err)
		}
		return e
	}
	v := serveNFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: testenv.CopyFixture(t, fixturePartitioned)}}})
	nfsStatus := func(res io.ReadSeeker, err error) uint32 {
		var nerr *nfsc.Error
		if errors.As(err, &nerr) {
			return nerr.ErrorNum
		}
		if err != nil {
			t.Fatalf("no NFS status: %v", err)
		}
		st, err := xdr.ReadUint32(res)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for _, dir := range []string{snap + "/letter=a", "inbox"} {
		fuseErr := map[string]syscall.Errno{
			"symlink": errnoOf(os.Symlink("x", filepath.Join(tdir, dir, "l"))),
			"link":    errnoOf(os.Link(filepath.Join(tdir, file), filepath.Join(tdir, dir, "h"))),
			"mknod":   errnoOf(syscall.Mknod(filepath.Join(tdir, dir, "p"), syscall.S_IFIFO|0o644, 0)),
		}
		_, dirFH, err := v.Lookup("t/" + dir)
		if err != nil {
			t.Fatal(err)
		}
		_, fileFH, err := v.Lookup("t/" + file)
		if err != nil {
			t.Fatal(err)
		}
		hdr := func(proc uint32) rpc.Header {
			return rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: proc, Cred: rpc.AuthNull, Verf: rpc.AuthNull}
		}
		type linkArgs struct {
			rpc.Header
			File, Dir []byte
			Name      string
		}
		type symlinkArgs struct {
			rpc.Header
			Dir            []byte
			Name           string
			SetMode, Mode  uint32
			SetUID, SetGID uint32
			SetSize        uint32
			SetAt, SetMt   uint32
			Target         string
		}
		type mknodArgs struct {
			rpc.Header
			Dir             []byte
			Name            string
			Type            uint32
			SetMode, Mode   uint32
			SetUID, SetGID  uint32
			SetSize         uint32
			SetAtime, SetMt uint32
		}
		nfsGot := map[string]uint32{
			"symlink": nfsStatus(v.Call(&symlinkArgs{Header: hdr(10), Dir: dirFH, Name: "l", SetMode: 1, Mode: 0o777, Target: "x"})),
			"link":    nfsStatus(v.Call(&linkArgs{Header: hdr(15), File: fileFH, Dir: dirFH, Name: "h"})),
			"mknod":   nfsStatus(v.Call(&mknodArgs{Header: hdr(11), Dir: dirFH, Name: "p", Type: 7, SetMode: 1, Mode: 0o644})),
		}
		for op, errno := range fuseErr {
			want, known := nfsStatusOfErrno[errno]
			if !known || nfsGot[op] != want {
				t.Errorf("%s in %s: FUSE %v, NFS status %d (want %d)", op, dir, errno, nfsGot[op], want)
			}
		}
		t.Logf("%s: FUSE %v, NFS %v", dir, fuseErr, nfsGot)
	}
	checkUnchanged(t, root, before)
}
