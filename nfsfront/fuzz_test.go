package nfsfront

import (
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

// rpcCall is an ONC RPC call record (record marking, AUTH_NULL) of prog,
// version 3, procedure proc with body.
func rpcCall(prog, proc uint32, body []byte) []byte {
	var b []byte
	for _, v := range []uint32{1, 0, 2, prog, 3, proc, 0, 0, 0, 0} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = append(b, body...)
	return append(binary.BigEndian.AppendUint32(nil, 1<<31|uint32(len(b))), b...)
}

const (
	nfsProg   = 100003
	mountProg = 100005
)

// serveDir's server on a Unix socket: thousands of connections a minute
// over TCP loopback run out of ports (TIME_WAIT).
func serveUnix(t *testing.T, dir string) *Server {
	root, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "nfs.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(l, fs.NewNodeFS(root, &fs.Options{}), Options{})
	t.Cleanup(func() { srv.Close() })
	return srv
}

func dialRetry(addr string) (net.Conn, error) { return net.DialTimeout("unix", addr, 5*time.Second) }

// roundTrip sends one call on c and reads its answer; ok is false when the
// server closed the connection instead (its answer to bad input).
func roundTrip(t testing.TB, c net.Conn, record []byte) (ok bool) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(record); err != nil {
		return false
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("no answer and no close within 30 seconds")
		}
		return false
	}
	n := binary.BigEndian.Uint32(hdr[:]) &^ (1 << 31)
	if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
		return false
	}
	return true
}

// Requests with hostile arguments (any bytes after a well-formed call
// header, for every NFS and MOUNT procedure) never bring the server down
// (a panic in it would end the test binary) nor wedge it: each is
// answered or its connection closed within 30 seconds, and a NULL call on
// a new connection is answered after it.
func FuzzHostileRequests(f *testing.F) {
	dir := f.TempDir()
	f.Add(byte(3), []byte{0, 0, 0, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 1, 'a', 0, 0, 0})
	f.Add(byte(6), []byte{0, 0, 0, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add(byte(17), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(byte(1+128), []byte{0, 0, 0, 1, '/'})
	f.Add(byte(7), []byte{0, 0, 0, 0})
	var addr string
	f.Fuzz(func(t *testing.T, proc byte, body []byte) {
		if addr == "" {
			srv := serveUnix(t, dir)
			addr = srv.Addr().String()
			t.Cleanup(func() { addr = "" })
		}
		prog := uint32(nfsProg)
		if proc >= 128 {
			prog, proc = mountProg, proc-128
		}
		for i, record := range [][]byte{rpcCall(prog, uint32(proc%24), body), rpcCall(nfsProg, 0, nil)} {
			c, err := dialRetry(addr)
			if err != nil {
				t.Fatalf("server gone: %v", err)
			}
			if !roundTrip(t, c, record) && i == 1 {
				t.Fatal("NULL call not answered after a hostile request")
			}
			c.Close()
		}
	})
}
