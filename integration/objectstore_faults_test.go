package integration

// S3 faults through the mount: the server killed in the middle of reads
// (EIO, then the same reads work once it is back), and in the middle of
// an inbox commit, or the answer to the commit's conditional PUT lost or
// late (the PUT reached the server, the writer cannot know): an append
// lands exactly once or close() fails with a clear error, never twice.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
	"github.com/deltafs/deltafs/writeback"
)

// faultProxy is an HTTP proxy in front of an S3 server that passes every
// request through, except the conditional PUTs of commits
// (_delta_log/<version>.json with If-None-Match), which it can hold, make
// late, or answer by resetting the connection after the server stored
// them.
type faultProxy struct {
	addr   string
	target string
	mu     sync.Mutex
	plan   func(attempt int) commitFault // guarded by mu; nil passes everything
	puts   int                           // guarded by mu: commit PUTs seen
}

// commitFault is what the proxy does to one commit PUT.
type commitFault struct {
	before func()        // runs before the PUT is forwarded (may block)
	after  func()        // runs once the server answered (may block)
	late   time.Duration // holds the answer this long
	drop   bool          // resets the client's connection instead of answering
}

var commitKey = regexp.MustCompile(`/_delta_log/\d{20}\.json$`)

func newFaultProxy(t *testing.T, srv *testenv.Server) *faultProxy {
	p := &faultProxy{target: srv.Addr}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	p.addr = hs.Listener.Addr().String()
	return p
}

// url returns the S3 URL of path in srv's bucket, through the proxy.
func (p *faultProxy) url(srv *testenv.Server, path string) string {
	return strings.Replace(srv.BucketURL(path), srv.Addr, p.addr, 1)
}

// setPlan sets the faults of the next commit PUTs (attempts count from 1).
func (p *faultProxy) setPlan(plan func(attempt int) commitFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan, p.puts = plan, 0
}

// commitPuts returns the number of commit PUTs seen since setPlan.
func (p *faultProxy) commitPuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.puts
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var f commitFault
	if r.Method == http.MethodPut && r.Header.Get("If-None-Match") != "" && commitKey.MatchString(r.URL.Path) {
		p.mu.Lock()
		p.puts++
		if p.plan != nil {
			f = p.plan(p.puts)
		}
		p.mu.Unlock()
	}
	if f.before != nil {
		f.before()
	}
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.RequestURI = "http", p.target, ""
	resp, err := http.DefaultTransport.RoundTrip(out)
	if f.after != nil {
		f.after()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway) // as a load balancer would answer
		return
	}
	defer resp.Body.Close()
	select {
	case <-time.After(f.late):
	case <-r.Context().Done():
		return
	}
	if f.drop {
		resetConn(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// resetConn closes the client's connection with a TCP reset.
func resetConn(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// TestS3MountReadsAcrossRestart kills the S3 server while a file of a
// mounted S3 table is being read: the rest of the read fails with EIO
// (no hang), the snapshot's listing still works, and once the server is
// back the same descriptor and a new one read the stored bytes.
func TestS3MountReadsAcrossRestart(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "warehouse/t", testenv.Fixture(t, fixtureAppend))
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: srv.BucketURL("warehouse/t")}}})
	name, stored := appendBigFile(t, srv, filepath.Join(mnt, "t"), 24<<20)
	latest := filepath.Join(mnt, "t", "@latest")

	f, err := os.Open(filepath.Join(latest, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, stored[:len(head)]) {
		t.Fatalf("first read: %v", err)
	}
	srv.Kill()
	t0 := time.Now()
	_, err = io.ReadAll(f)
	t.Logf("read with the server down failed after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("read across the kill: %v, want EIO", err)
	}
	if ents, err := os.ReadDir(latest); err != nil || len(ents) == 0 {
		t.Errorf("listing the loaded snapshot with the server down: %d entries, %v", len(ents), err)
	}
	srv.Start()
	tail := make([]byte, 1<<20)
	off := int64(len(stored) - len(tail))
	if _, err := f.ReadAt(tail, off); err != nil || !bytes.Equal(tail, stored[off:]) {
		t.Errorf("read of the open file after the restart: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(latest, name))
	if err != nil || !bytes.Equal(got, stored) {
		t.Errorf("read after the restart: %d of %d bytes, %v", len(got), len(stored), err)
	}
}

// appendBigFile appends a Parquet file of about size bytes of random rows
// to the fixtureAppend table mounted at tdir (in srv at warehouse/t) and
// returns its name in the snapshot and its stored bytes.
func appendBigFile(t *testing.T, srv *testenv.Server, tdir string, size int) (string, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]basicRow, size/200)
	letters := make([]byte, 200)
	for i := range rows {
		for j := range letters {
			letters[j] = byte('a' + rng.IntN(26))
		}
		rows[i] = basicRow{Letter: ptr(string(letters)), Number: ptr(int64(i))}
	}
	if err := os.WriteFile(filepath.Join(tdir, "inbox", "big.parquet"), parquetBytes(t, rows), 0o644); err != nil {
		t.Fatalf("append the big file: %v", err)
	}
	root := filepath.Join(srv.BucketDir, "warehouse", "t")
	snap := latestSnapshot(t, root)
	for _, f := range snap.Files() {
		if f.Size > int64(size)/2 {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatal(err)
			}
			return filepath.Base(f.Path), data
		}
	}
	t.Fatalf("no file of %d bytes in version %d", size, snap.Version())
	return "", nil
}

// commitFaultCase is one fault of TestS3InboxCommitFaults: plan, given
// the test's control of the server, returns the proxy's plan; down is how
// long a killed server stays down; want is the outcome close must have.
type commitFaultCase struct {
	name string
	plan func(c *serverControl) func(attempt int) commitFault
	down time.Duration
	want outcome
}

// outcome is what an inbox write under a fault may end in.
type outcome int

const (
	landed outcome = iota // close succeeds, the file is in one new version
	failed                // close fails with EIO, the file is in no version
	either                // one of the two, or close fails and the file is in one version
)

// killAt returns a plan that has the server killed before (or after) the
// first commit PUT reaches it; after, the answer is lost too.
func killAt(after bool) func(c *serverControl) func(int) commitFault {
	return func(c *serverControl) func(int) commitFault {
		return func(n int) commitFault {
			switch {
			case n != 1:
				return commitFault{}
			case after:
				return commitFault{after: c.kill, drop: true}
			}
			return commitFault{before: c.kill}
		}
	}
}

var commitFaultCases = []commitFaultCase{
	{name: "answer lost once", want: landed, plan: func(*serverControl) func(int) commitFault {
		return func(n int) commitFault { return commitFault{drop: n == 1} }
	}},
	{name: "answer lost on every attempt", want: landed, plan: func(*serverControl) func(int) commitFault {
		return func(int) commitFault { return commitFault{drop: true} }
	}},
	// Back within the SDK's retries or not: either outcome is right.
	{name: "server down 1s before the PUT", plan: killAt(false), down: time.Second, want: either},
	{name: "server down 1s after the PUT landed", plan: killAt(true), down: time.Second, want: either},
	// Down longer than the SDK's three attempts at the PUT (backoffs of at
	// most 2 s and 4 s): the PUT never lands, and close fails, whether the
	// check that follows finds the server down (outcome unknown) or back
	// (no commit).
	{name: "server down 8s before the PUT", plan: killAt(false), down: 8 * time.Second, want: failed},
}

// TestS3InboxCommitFaults drops a file into the inbox of an S3 table while
// the proxy in front of the server loses the answer to the commit's PUT,
// or the server is killed just before or just after the PUT and restarted
// later: close() succeeds and the file is in exactly one new version, or
// close() fails with EIO, the status line says why, and the file is in at
// most one version; which of these each fault must end in is its want.
func TestS3InboxCommitFaults(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	proxy := newFaultProxy(t, srv)
	for i, c := range commitFaultCases {
		t.Run(c.name, func(t *testing.T) {
			prefix := fmt.Sprintf("faults/%d", i)
			testenv.UploadDir(t, srv.URL, prefix, testenv.Fixture(t, fixtureAppend))
			root := filepath.Join(srv.BucketDir, filepath.FromSlash(prefix))
			v := latestSnapshot(t, root).Version()
			mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: proxy.url(srv, prefix)}}})
			ctl := &serverControl{killReq: make(chan chan struct{}), down: c.down}
			proxy.setPlan(c.plan(ctl))
			defer proxy.setPlan(nil)
			data := parquetBytes(t, []basicRow{{ptr("fault"), ptr(int64(i)), nil}})
			var took time.Duration
			err := ctl.serveWhile(t, srv, func() error {
				t0 := time.Now()
				defer func() { took = time.Since(t0) }()
				return os.WriteFile(filepath.Join(mnt, "t", "inbox", "f.parquet"), data, 0o644)
			})
			t.Logf("write+close took %v: %v; %d commit PUTs", took.Round(time.Millisecond), err, proxy.commitPuts())
			checkCommitOutcome(t, root, filepath.Join(mnt, "t"), v, err, c.want)
		})
	}
}

// serverControl lets the proxy's goroutine have the test goroutine kill
// the server (testenv.Server is for the test goroutine only) and restart
// it down later.
type serverControl struct {
	killReq chan chan struct{}
	down    time.Duration
}

// kill blocks until the server is down.
func (c *serverControl) kill() {
	done := make(chan struct{})
	c.killReq <- done
	<-done
}

// serveWhile runs write in another goroutine and serves kill requests
// meanwhile: kill the server, let the proxy go on, start the server again
// c.down later. It returns write's error once both are done.
func (c *serverControl) serveWhile(t *testing.T, srv *testenv.Server, write func() error) error {
	res := make(chan error, 1)
	go func() { res <- write() }()
	var restart <-chan time.Time
	for {
		select {
		case done := <-c.killReq:
			srv.Kill()
			close(done)
			restart = time.After(c.down)
		case <-restart:
			srv.Start()
			restart = nil
		case err := <-res:
			if restart != nil {
				<-restart
				srv.Start()
			}
			return err
		}
	}
}

// checkCommitOutcome checks the table at root after one inbox write of
// f.parquet that returned err: no version but the file's own after v, the
// file in at most one, the outcome one that want allows, and the last
// status line agreeing with close.
func checkCommitOutcome(t *testing.T, root, tdir string, v int64, err error, want outcome) {
	t.Helper()
	latest := latestSnapshot(t, root).Version()
	var in []int64
	for ver := v + 1; ver <= latest; ver++ {
		if srcs := commitSources(t, root, ver); len(srcs) == 1 && srcs[0] == "f.parquet" {
			in = append(in, ver)
		}
	}
	ev := inboxStatus(t, tdir)
	last := ev[len(ev)-1]
	t.Logf("outcome: close %v, versions %v, status %s", err, in, statusText(last))
	switch {
	case len(in) > 1:
		t.Fatalf("f.parquet committed in versions %v", in)
	case latest > v+int64(len(in)):
		t.Fatalf("versions %d..%d hold %d commits of f.parquet: stray commits", v+1, latest, len(in))
	case err == nil && len(in) != 1:
		t.Fatalf("close succeeded but f.parquet is in no version (latest %d)", latest)
	case err == nil && (want == failed || last.Version == nil || *last.Version != in[0]):
		t.Errorf("close succeeded, status %s; want %v", statusText(last), want)
	case err != nil && (want == landed || want == failed && len(in) != 0):
		t.Errorf("close failed with f.parquet in versions %v: want %v", in, want)
	case err != nil && (!errors.Is(err, syscall.EIO) || last.Errno != "EIO" || !strings.Contains(last.Error, "write commit")):
		t.Errorf("close: %v, status %s: want EIO and a reason naming the commit", err, statusText(last))
	}
}

// statusText formats a status line for messages.
func statusText(e inboxEvent) string {
	if e.Version != nil {
		return fmt.Sprintf("%s: version %d", e.File, *e.Version)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Errno, e.Error)
}

// TestS3CommitTimeoutResolvedByTxnID holds the answer to a commit's PUT
// past the store's request timeout, after the server stored it: the
// committer must find its commit in the log by its txnId and report that
// version, not retry into a second one.
func TestS3CommitTimeoutResolvedByTxnID(t *testing.T) {
	srv := testenv.StartS3(t)
	proxy := newFaultProxy(t, srv)
	testenv.UploadDir(t, srv.URL, "t", testenv.Fixture(t, fixtureAppend))
	ctx := context.Background()
	st := openStore(t, proxy.url(srv, "t")).WithRequestTimeout(time.Second)
	c := writeback.New(delta.Open(st, delta.Options{}), writeback.Options{})
	local := filepath.Join(t.TempDir(), "late.parquet")
	if err := os.WriteFile(local, parquetBytes(t, []basicRow{{ptr("late"), ptr[int64](1), nil}}), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy.setPlan(func(n int) commitFault { return commitFault{late: 3 * time.Second} })
	res, err := c.Append(ctx, []writeback.File{{LocalPath: local, Name: "late.parquet"}})
	if err != nil {
		t.Fatalf("append with a late answer: %v", err)
	}
	if puts := proxy.commitPuts(); puts != 1 {
		t.Errorf("%d commit PUTs, want 1 (then a read of the log)", puts)
	}
	root := filepath.Join(srv.BucketDir, "t")
	if latest := latestSnapshot(t, root).Version(); res.Version != 2 || latest != 2 {
		t.Fatalf("append reported version %d, latest is %d; want 2 and 2", res.Version, latest)
	}
	if srcs := commitSources(t, root, 2); len(srcs) != 1 || srcs[0] != "late.parquet" {
		t.Errorf("version 2 holds %v", srcs)
	}
}
