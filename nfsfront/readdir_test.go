package nfsfront

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// dirPageOf is one READDIRPLUS reply, decoded.
type dirPageOf struct {
	status  uint32
	verf    uint64
	names   []string
	cookies []uint64
	eof     bool
}

// readdirPlus calls the server's READDIRPLUS for dir from cookie, with
// replies of at most maxcount bytes.
func readdirPlus(t *testing.T, srv *Server, dir string, cookie, verf uint64, maxcount uint32) dirPageOf {
	t.Helper()
	var a encoder
	a.opaque(srv.handleFor(dir))
	a.uint64(cookie)
	a.uint64(verf)
	a.uint32(maxcount)
	a.uint32(maxcount)
	e := srv.readdir(7, &decoder{b: a.b}, true)
	d := &decoder{b: e.b[len(replyHeader(7, acceptSuccess).b):]}
	var pg dirPageOf
	if pg.status = d.uint32(); pg.status != nfs3OK {
		return pg
	}
	if d.bool() { // the directory's fattr3: 84 bytes
		d.b = d.b[84:]
	}
	pg.verf = d.uint64()
	for d.bool() {
		d.uint64() // fileid
		pg.names = append(pg.names, d.string(255))
		pg.cookies = append(pg.cookies, d.uint64())
		if d.bool() {
			d.b = d.b[84:]
		}
		if d.bool() {
			d.opaque(64)
		}
	}
	pg.eof = d.bool()
	if d.err != nil {
		t.Fatalf("READDIRPLUS reply: %v", d.err)
	}
	return pg
}

// A directory is listed in pages streamed from the tree: small pages list
// every entry once, in the tree's order; a page may start at any cookie
// a client kept (its stream closed meanwhile: the tree seeks); the
// streams kept between pages are bounded; a directory that changed says
// NFS3ERR_BAD_COOKIE to an old verifier.
func TestReaddirStreams(t *testing.T) {
	dir := t.TempDir()
	const n = 3000
	var want []string
	for i := range n {
		name := fmt.Sprintf("file-%05d.parquet", i)
		want = append(want, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, srv, raw := serveDir(t, dir)

	var got []string
	var cookies []uint64
	cookie, verf, pages := uint64(0), uint64(0), 0
	for {
		pg := readdirPlus(t, srv, "", cookie, verf, 4096)
		if pg.status != nfs3OK {
			t.Fatalf("page %d at cookie %d: status %d", pages, cookie, pg.status)
		}
		got, cookies = append(got, pg.names...), append(cookies, pg.cookies...)
		pages++
		if pg.eof {
			break
		}
		cookie, verf = pg.cookies[len(pg.cookies)-1], pg.verf
	}
	if pages < 10 {
		t.Errorf("%d pages of 4 KiB for %d entries", pages, n)
	}
	if got[0] != "." || got[1] != ".." {
		t.Errorf("first entries %q, want . and ..", got[:2])
	}
	names := got[2:]
	sorted := slices.Sorted(slices.Values(names))
	if !slices.Equal(sorted, want) {
		t.Fatalf("listed %d names, want the %d files once each", len(names), n)
	}
	srv.fs.dirs.mu.Lock()
	kept := len(srv.fs.dirs.m)
	srv.fs.dirs.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d streams kept after the listing ended", kept)
	}

	// A page from a cookie kept by the client, with no stream open there.
	mid := 2 + n/2
	pg := readdirPlus(t, srv, "", cookies[mid], verf, 4096)
	if pg.status != nfs3OK || len(pg.names) == 0 || pg.names[0] != got[mid+1] {
		t.Errorf("page from cookie %d: status %d, names %q..., want %q first", cookies[mid], pg.status, pg.names[:min(3, len(pg.names))], got[mid+1])
	}

	// Many listings left half read: at most maxDirStreams kept.
	for range maxDirStreams + 20 {
		readdirPlus(t, srv, "", 0, 0, 4096)
	}
	srv.fs.dirs.mu.Lock()
	kept = len(srv.fs.dirs.m)
	srv.fs.dirs.mu.Unlock()
	if kept > maxDirStreams {
		t.Errorf("%d streams kept, at most %d", kept, maxDirStreams)
	}

	// The directory changes: an old verifier is a bad cookie.
	if err := os.Mkdir(filepath.Join(dir, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv.fs.t.forget("") // the kernel's attribute timeout, passed
	if pg := readdirPlus(t, srv, "", cookies[mid], verf, 4096); pg.status != nfs3BadCookie {
		t.Errorf("page of a changed directory with its old verifier: status %d, want NFS3ERR_BAD_COOKIE", pg.status)
	}

	srv.Close()
	for id, held := range raw.held {
		if held != 0 && id != 1 {
			t.Errorf("node %d: %d lookups not returned after close", id, held)
		}
	}
}

// Clients listing one directory at once each get every entry once: a
// stream is taken by one page at a time, and pages from the same cookie
// get streams of their own.
func TestReaddirStreamsConcurrent(t *testing.T) {
	dir := t.TempDir()
	const n = 1000
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, srv, raw := serveDir(t, dir)
	errs := make(chan error, 8)
	for c := range 8 {
		go func() {
			seen := map[string]int{}
			cookie, verf := uint64(0), uint64(0)
			for pages := 0; ; pages++ {
				pg := readdirPlus(t, srv, "", cookie, verf, 2048+uint32(c)*512)
				if pg.status != nfs3OK {
					errs <- fmt.Errorf("client %d, page %d: status %d", c, pages, pg.status)
					return
				}
				for _, name := range pg.names {
					seen[name]++
				}
				if pg.eof {
					break
				}
				cookie, verf = pg.cookies[len(pg.cookies)-1], pg.verf
			}
			for name, k := range seen {
				if k != 1 {
					errs <- fmt.Errorf("client %d saw %s %d times", c, name, k)
					return
				}
			}
			if len(seen) != n+2 {
				errs <- fmt.Errorf("client %d saw %d entries, want %d", c, len(seen), n+2)
				return
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	srv.Close()
	for id, held := range raw.held {
		if held != 0 && id != 1 {
			t.Errorf("node %d: %d lookups not returned after close", id, held)
		}
	}
}
