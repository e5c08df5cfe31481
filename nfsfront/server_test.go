package nfsfront

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"

	"github.com/deltafs/deltafs/internal/testkit/nfsdial"
)

// countingFS counts the lookups a RawFileSystem hands out and gets back,
// by node: a front end that forgets a node still in use, or never returns
// a lookup, breaks the FUSE protocol the tree relies on.
type countingFS struct {
	fuse.RawFileSystem
	mu   sync.Mutex
	held map[uint64]int64 // lookups given minus forgotten
}

func (c *countingFS) add(id uint64, n int64) {
	c.mu.Lock()
	c.held[id] += n
	c.mu.Unlock()
}

func (c *countingFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	st := c.RawFileSystem.Lookup(cancel, h, name, out)
	if st == fuse.OK && out.NodeId != 0 {
		c.add(out.NodeId, 1)
	}
	return st
}

func (c *countingFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	st := c.RawFileSystem.ReadDirPlus(cancel, in, out)
	data := out.Bytes()
	for i := 0; i+entryOutSize+direntSize <= len(data); {
		id := bytesU64(data[i:])
		n := int(bytesU32(data[i+entryOutSize+16:]))
		if id != 0 {
			c.add(id, 1)
		}
		i += entryOutSize + direntSize + (n+7)&^7
	}
	return st
}

func (c *countingFS) Forget(id, n uint64) {
	c.add(id, -int64(n))
	c.RawFileSystem.Forget(id, n)
}

func bytesU64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func bytesU32(b []byte) uint32 { return uint32(bytesU64(append(b[:4:4], 0, 0, 0, 0))) }

// serveDir serves dir (go-fuse's loopback file system) over NFS and
// returns a client of it.
func serveDir(t *testing.T, dir string) (*nfsc.Target, *Server, *countingFS) {
	t.Helper()
	root, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw := &countingFS{RawFileSystem: fs.NewNodeFS(root, &fs.Options{}), held: map[uint64]int64{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(l, raw, Options{})
	t.Cleanup(func() { srv.Close() })
	return dial(t, l.Addr().String(), "/"), srv, raw
}

func dial(t *testing.T, addr, export string) *nfsc.Target {
	t.Helper()
	c, err := nfsdial.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	v, err := (&nfsc.Mount{Client: c}).Mount(export, rpc.AuthNull)
	if err != nil {
		c.Close()
		t.Fatalf("mount %s: %v", export, err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func readAll(t *testing.T, v *nfsc.Target, p string) []byte {
	t.Helper()
	f, err := v.Open(p)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return b
}

// The served tree is the directory: names, types, sizes, bytes (a file
// larger than one READ) and link targets; every change is refused, and
// once the server closes, every lookup it took is returned.
func TestServeDir(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	files := map[string][]byte{"a/b.txt": []byte("hello"), "a/c/big.bin": big, "empty": nil}
	for p, b := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(dir, "latest")); err != nil {
		t.Fatal(err)
	}
	v, srv, raw := serveDir(t, dir)

	entries, err := v.ReadDirPlus("/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != "." && e.Name() != ".." {
			names = append(names, e.Name())
		}
	}
	if slices.Sort(names); !slices.Equal(names, []string{"a", "empty", "latest"}) {
		t.Errorf("root lists %q", names)
	}
	for p, want := range files {
		if got := readAll(t, v, p); !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes, want %d (equal: %v)", p, len(got), len(want), bytes.Equal(got, want))
		}
		fi, _, err := v.Lookup(p)
		if err != nil || fi.Size() != int64(len(want)) {
			t.Errorf("%s: lookup size %v, %v; want %d", p, fi, err, len(want))
		}
	}
	// The client follows the link itself (READLINK), as a kernel would.
	fi, _, err := v.Lookup("latest")
	if err != nil || fi.(*nfsc.Fattr).Type != nfsc.NF3Lnk || fi.Mode().Perm() != 0o777 {
		t.Fatalf("latest: %v, %v; want a symbolic link", fi, err)
	}
	f, err := v.Open("latest")
	if err == nil {
		if target, err := f.Readlink(); err != nil || target != "a" {
			t.Errorf("readlink latest: %q, %v", target, err)
		}
		f.Close()
	}
	if _, err := v.Create("new.txt", 0o644); err == nil {
		t.Error("create: no error, want NFS3ERR_ROFS")
	}
	if err := v.Remove("a/b.txt"); err == nil {
		t.Error("remove: no error, want NFS3ERR_ROFS")
	}
	if _, err := os.Stat(filepath.Join(dir, "a/b.txt")); err != nil {
		t.Errorf("a refused remove removed the file: %v", err)
	}
	if _, _, err := v.Lookup("missing"); err == nil {
		t.Error("lookup of a missing name: no error")
	}

	srv.Close()
	raw.mu.Lock()
	defer raw.mu.Unlock()
	for id, n := range raw.held {
		if n != 0 {
			t.Errorf("node %d: %d lookups not returned after Close", id, n)
		}
	}
	if len(raw.held) < 5 {
		t.Errorf("only %d nodes looked up: the count is not seeing lookups", len(raw.held))
	}
}

// Only the export "/" mounts.
func TestMountOtherExportRefused(t *testing.T) {
	_, srv, _ := serveDir(t, t.TempDir())
	c, err := nfsdial.Dial(srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := (&nfsc.Mount{Client: c}).Mount("/elsewhere", rpc.AuthNull); err == nil {
		t.Error("mount of /elsewhere: no error")
	}
}

// An exclusive CREATE (O_EXCL: mkstemp, rsync's temporary files) makes
// the file once: sent again with its verifier (a lost reply) it succeeds
// with the same handle, with another verifier it is NFS3ERR_EXIST; an
// UNCHECKED create of an existing file truncates it.
func TestExclusiveCreate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(l, fs.NewNodeFS(root, &fs.Options{}), Options{Writable: true})
	defer srv.Close()
	v := dial(t, l.Addr().String(), "/")
	_, dirFH, err := v.Lookup("a")
	if err != nil {
		t.Fatal(err)
	}
	type createArgs struct {
		rpc.Header
		Dir  []byte
		Name string
		How  uint32
		Verf uint64
	}
	create := func(verf uint64) (status uint32, fh []byte) {
		res, err := v.Call(&createArgs{Header: rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: nfsc.NFSProc3Create, Cred: rpc.AuthNull, Verf: rpc.AuthNull},
			Dir: dirFH, Name: ".tmp.XXXX", How: 2, Verf: verf})
		if err != nil {
			var nerr *nfsc.Error
			if errors.As(err, &nerr) {
				return nerr.ErrorNum, nil
			}
			if errors.Is(err, os.ErrExist) {
				return 17, nil
			}
			t.Fatal(err)
		}
		status, rerr := xdr.ReadUint32(res)
		if rerr != nil || status != 0 {
			return status, nil
		}
		var out struct {
			FH nfsc.PostOpFH3
		}
		if err := xdr.Read(res, &out); err != nil {
			t.Fatal(err)
		}
		return 0, out.FH.FH
	}
	st, fh1 := create(42)
	if st != 0 || len(fh1) == 0 {
		t.Fatalf("exclusive create: status %d, handle %x", st, fh1)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", ".tmp.XXXX")); err != nil {
		t.Fatalf("exclusive create made no file: %v", err)
	}
	if st, fh2 := create(42); st != 0 || !bytes.Equal(fh1, fh2) {
		t.Errorf("the same exclusive create again: status %d, handle %x (first %x)", st, fh2, fh1)
	}
	if st, _ := create(43); st != 17 {
		t.Errorf("an exclusive create with another verifier: status %d, want NFS3ERR_EXIST", st)
	}
}

// Files read one after another stay open for their next READs, but no
// more than maxOpen of them: a client reading through many files holds
// a bounded number of the tree's opens (and of its descriptors).
func TestOpensBounded(t *testing.T) {
	dir := t.TempDir()
	n := maxOpen + 44
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, srv, raw := serveDir(t, dir)
	for i := range n {
		if got := string(readAll(t, v, fmt.Sprintf("f%03d", i))); got != fmt.Sprint(i) {
			t.Fatalf("f%03d: read %q", i, got)
		}
	}
	srv.fs.opens.mu.Lock()
	open := len(srv.fs.opens.m)
	srv.fs.opens.mu.Unlock()
	if open > maxOpen {
		t.Errorf("%d files open after reading %d, want at most %d", open, n, maxOpen)
	}
	srv.Close()
	raw.mu.Lock()
	defer raw.mu.Unlock()
	for id, k := range raw.held {
		if k != 0 {
			t.Errorf("node %d: %d lookups not returned after Close", id, k)
		}
	}
}
