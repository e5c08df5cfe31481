//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"

	"github.com/deltafs/deltafs/internal/testkit/nfsdial"
	"github.com/deltafs/deltafs/mount"
)

// The NFS front end against the FUSE mount: a sequential read
// of the sequential file, and a listing with attributes of the ls table's
// snapshot, in the same run. This kernel has no NFS client, so the NFS
// side is the user-space client (go-nfs-client) in this process, over
// loopback TCP: the figure is the server's plus that client's, where the
// FUSE side's is the kernel's.

// nfsServed is a running NFS server of a table with a client of it.
type nfsServed struct {
	v    *nfsc.Target
	stop func() error
}

func serveNFSTable(work, root string) (*nfsServed, error) {
	cache, err := os.MkdirTemp(work, "cache-nfs-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv, err := mount.ServeNFS(context.Background(), mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, CacheDir: cache, ReadOnly: true, Logger: warnLogger}, l)
	if err != nil {
		return nil, err
	}
	c, err := nfsdial.Dial(srv.Addr())
	if err != nil {
		srv.Unmount()
		return nil, err
	}
	v, err := (&nfsc.Mount{Client: c}).Mount("/", rpc.AuthNull)
	if err != nil {
		srv.Unmount()
		return nil, err
	}
	return &nfsServed{v: v, stop: func() error { v.Close(); err := srv.Unmount(); os.RemoveAll(cache); return err }}, nil
}

// readNFS reads p to its end in 1 MiB READs.
func readNFS(v *nfsc.Target, p string, want int64) (time.Duration, error) {
	buf := make([]byte, 1<<20)
	start := time.Now()
	f, err := v.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if err == io.EOF || (err == nil && k == 0) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if n != want {
		return 0, fmt.Errorf("read %d bytes over NFS, want %d", n, want)
	}
	return time.Since(start), nil
}

// readDirPlusNFS lists dir with READDIRPLUS replies of up to 1 MiB (what
// a kernel client asks; go-nfs-client's own asks for 4 KiB) and returns
// the entries with attributes.
func readDirPlusNFS(v *nfsc.Target, dir string) (int, error) {
	_, fh, err := v.Lookup(dir)
	if err != nil {
		return 0, err
	}
	type args struct {
		rpc.Header
		FH         []byte
		Cookie     uint64
		CookieVerf uint64
		DirCount   uint32
		MaxCount   uint32
	}
	type entry struct {
		IsSet bool           `xdr:"union"`
		Entry nfsc.EntryPlus `xdr:"unioncase=1"`
	}
	var cookie, verf uint64
	n := 0
	for {
		res, err := v.Call(&args{Header: rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: nfsc.NFSProc3ReadDirPlus, Cred: rpc.AuthNull, Verf: rpc.AuthNull},
			FH: fh, Cookie: cookie, CookieVerf: verf, DirCount: 1 << 20, MaxCount: 1 << 20})
		if err != nil {
			return n, err
		}
		status, err := xdr.ReadUint32(res)
		if err != nil || status != 0 {
			return n, fmt.Errorf("readdirplus: status %d, %v", status, err)
		}
		var ok struct {
			DirAttrs   nfsc.PostOpAttr
			CookieVerf uint64
		}
		if err := xdr.Read(res, &ok); err != nil {
			return n, err
		}
		for {
			var e entry
			if err := xdr.Read(res, &e); err != nil {
				return n, err
			}
			if !e.IsSet {
				break
			}
			cookie = e.Entry.Cookie
			if e.Entry.Attr.IsSet && e.Entry.FileName != "." && e.Entry.FileName != ".." {
				n++
			}
		}
		eof, err := xdr.ReadUint32(res)
		if err != nil {
			return n, err
		}
		if eof != 0 {
			return n, nil
		}
		verf = ok.CookieVerf
	}
}

// benchNFS times, on fresh servers and mounts, the first and second
// sequential read of the sequential file, and a listing with attributes
// of the ls table's snapshot, over NFS and through FUSE.
func benchNFS(o options) ([]section, error) {
	seqRoot, name, size, err := seqTable(o)
	if err != nil {
		return nil, err
	}
	lsRoot, done := generated(o, fmt.Sprintf("many-%d-v2", o.files))
	if !done {
		if _, err := writeManyTable(lsRoot, o.files); err != nil {
			return nil, err
		}
	}
	var fuse1, fuse2, nfs1, nfs2, fuseLs, nfsLs []time.Duration
	for range o.trials {
		// FUSE (userspace reads: the NFS side has no passthrough either).
		m, err := mountConfig(deltaUser, o.work, seqRoot, filepath.Join(o.work, "cache-nfsbench"))
		if err != nil {
			return nil, err
		}
		p := filepath.Join(m.dir(0), name)
		a, err := readFile(p, size)
		b, err2 := readFile(p, size)
		m.unmount()
		if err = cmpErr(err, err2); err != nil {
			return nil, err
		}
		fuse1, fuse2 = append(fuse1, a), append(fuse2, b)

		s, err := serveNFSTable(o.work, seqRoot)
		if err != nil {
			return nil, err
		}
		a, err = readNFS(s.v, "t/@v0/"+name, size)
		b, err2 = readNFS(s.v, "t/@v0/"+name, size)
		s.stop()
		if err = cmpErr(err, err2); err != nil {
			return nil, err
		}
		nfs1, nfs2 = append(nfs1, a), append(nfs2, b)

		d, err := lsCold(deltaPT, o.work, lsRoot, o.files)
		if err != nil {
			return nil, err
		}
		fuseLs = append(fuseLs, d)
		s, err = serveNFSTable(o.work, lsRoot)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		n, err := readDirPlusNFS(s.v, "t/@v0")
		d = time.Since(start)
		s.stop()
		if err == nil && n < o.files {
			err = fmt.Errorf("READDIRPLUS listed %d entries with attributes, want %d", n, o.files)
		}
		if err != nil {
			return nil, err
		}
		nfsLs = append(nfsLs, d)
	}
	s := section{NoteHeader: "note", Title: fmt.Sprintf("NFS (user-space client, loopback TCP) against FUSE (userspace reads), fresh server and mount each trial, median of %d", o.trials),
		Ratio: "NFS time / FUSE time (lower is better)"}
	for _, f := range []struct {
		name      string
		fuse, nfs []time.Duration
		bytes     int64
		target    target
	}{
		{fmt.Sprintf("sequential read of %d MiB, 1st", o.seqBytes>>20), fuse1, nfs1, size, atMost(2)},
		{fmt.Sprintf("sequential read of %d MiB, 2nd", o.seqBytes>>20), fuse2, nfs2, size, atMost(2)},
		{fmt.Sprintf("listing with attributes of %d files (FUSE: ls -l, cold)", o.files), fuseLs, nfsLs, 0, noTarget},
	} {
		fm, nm := median(f.fuse), median(f.nfs)
		fv, nv := round(fm), round(nm)
		if f.bytes > 0 {
			fv, nv = throughput(f.bytes, fm), throughput(f.bytes, nm)
		}
		s.Rows = append(s.Rows,
			row{Figure: f.name, Config: string(deltaUser), Value: fv, Ratio: 1},
			row{Figure: f.name, Config: "nfs", Value: nv, Ratio: nm.Seconds() / fm.Seconds(), Target: f.target})
	}
	return []section{s}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
