package integration

// S3 tests over versitygw: every fixture reads the same from S3 as from
// the local disk; request counts through a counting proxy; a store that
// ignores If-None-Match; the server killed and restarted during reads;
// bad credentials; one table mounted through mount.Mount.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/fixturecheck"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// fixtureCheckpointed has a classic checkpoint at version 10 of 15 and a
// _last_checkpoint pointing at it.
const fixtureCheckpointed = fixtureDV

// TestS3MatchesLocal uploads every fixture table to S3 and checks that the
// engine sees the same thing through S3 as through the local disk (which
// TestConformance checks against the fixtures' facts): the same outcome
// of loading the latest snapshot (or the same kind of error), version,
// live files and live rows, and the same list of versions.
func TestS3MatchesLocal(t *testing.T) {
	srv := testenv.StartS3(t)
	idx := testenv.Index(t)
	t0 := time.Now()
	for _, fx := range idx {
		testenv.UploadDir(t, srv.URL, "all/"+fx.Name, testenv.Fixture(t, fx.Name))
	}
	t.Logf("uploaded %d tables in %v", len(idx), time.Since(t0).Round(time.Millisecond))
	for _, fx := range idx {
		t.Run(fx.Name, func(t *testing.T) {
			t.Parallel()
			local := describeTable(t, testenv.Fixture(t, fx.Name))
			remote := describeTable(t, srv.BucketURL("all/"+fx.Name))
			if local != remote {
				t.Errorf("S3 differs from the local table:\n s3:    %s\n local: %s", remote, local)
			}
		})
	}
}

// describeTable summarizes what the engine reads of the table at u.
func describeTable(t *testing.T, u string) string {
	ctx := context.Background()
	tbl := delta.Open(openStore(t, u), delta.Options{})
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return "latest: " + errorKind(err)
	}
	rows, err := fixturecheck.LiveRows(ctx, snap)
	d := fmt.Sprintf("version %d, %d files, %d rows (%s)", snap.Version(), len(snap.Files()), rows, errorKind(err))
	vs, err := tbl.Versions(ctx)
	if err != nil {
		return d + ", versions: " + errorKind(err)
	}
	for _, v := range vs {
		d += fmt.Sprintf(" %d", v.Version)
	}
	return d
}

// errorKind names the engine sentinel err wraps ("ok" for nil).
func errorKind(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []error{delta.ErrUnsupportedFeature, delta.ErrNotATable, delta.ErrCorruptLog,
		delta.ErrCorruptDeletionVector, delta.ErrVersionNotFound, delta.ErrNotExist} {
		if errors.Is(err, s) {
			return "error: " + s.Error()
		}
	}
	return "other error"
}

// countingProxy is an HTTP proxy in front of an S3 server that records
// every request, and can make the server look like one that ignores
// If-None-Match (answering 200 where the server said 412).
type countingProxy struct {
	addr          string
	mu            sync.Mutex
	reqs          []s3Request // guarded by mu
	ignoreIfAbsnt bool        // guarded by mu
}

// s3Request is one request seen by the proxy.
type s3Request struct {
	op         string // LIST, GET, HEAD, PUT, DELETE
	key        string // object key, or the LIST prefix
	startAfter string
	keys       []string // keys a LIST returned
	rng        string   // a GET's Range header
}

func newCountingProxy(t testing.TB, target string) *countingProxy {
	p := &countingProxy{}
	tu, err := url.Parse("http://" + target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(tu)
			r.Out.Host = r.In.Host // signed by the client
		},
		ModifyResponse: p.record,
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.addr = srv.Listener.Addr().String()
	return p
}

// record notes a response's request, rewriting a 412 to a conditional PUT
// into a 200 when the proxy ignores If-None-Match.
func (p *countingProxy) record(resp *http.Response) error {
	req := resp.Request
	q := req.URL.Query()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	r := s3Request{op: req.Method, key: key, rng: req.Header.Get("Range")}
	if req.Method == http.MethodGet && key == "" && bucket != "" {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		r = s3Request{op: "LIST", key: q.Get("prefix"), startAfter: q.Get("start-after"), keys: xmlKeys(body)}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, r)
	if p.ignoreIfAbsnt && req.Method == http.MethodPut && resp.StatusCode == http.StatusPreconditionFailed {
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
		resp.Body = io.NopCloser(strings.NewReader(""))
		resp.ContentLength = 0
		resp.Header.Del("Content-Length")
		resp.Header.Set("ETag", `"deadbeef"`)
	}
	return nil
}

// xmlKeys returns the <Key> values of a ListObjectsV2 response.
func xmlKeys(body []byte) []string {
	var keys []string
	for rest := string(body); ; {
		_, after, ok := strings.Cut(rest, "<Key>")
		if !ok {
			return keys
		}
		k, after2, _ := strings.Cut(after, "</Key>")
		keys, rest = append(keys, k), after2
	}
}

// take returns the recorded requests and forgets them.
func (p *countingProxy) take() []s3Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.reqs
	p.reqs = nil
	return r
}

// url returns the S3 URL of path in srv's bucket, through the proxy.
func (p *countingProxy) url(srv *testenv.Server, path string) string {
	return strings.Replace(srv.BucketURL(path), srv.Addr, p.addr, 1)
}

// TestS3ListsFromCheckpoint counts the S3 requests of loading a snapshot
// of a table with a checkpoint (v10 of 15): every LIST of _delta_log starts
// at the checkpoint and returns nothing older; reading every data file
// and deletion vector of the loaded snapshot then makes no LIST at all.
func TestS3ListsFromCheckpoint(t *testing.T) {
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "t", testenv.Fixture(t, fixtureCheckpointed))
	proxy := newCountingProxy(t, srv.Addr)
	ctx := context.Background()
	st := openStore(t, proxy.url(srv, "t"))
	snap, err := delta.Open(st, delta.Options{}).Latest(ctx)
	if err != nil || snap.Version() != 15 {
		t.Fatalf("latest: version %v, %v", snap, err)
	}
	lists := 0
	for _, r := range proxy.take() {
		if r.op != "LIST" {
			continue
		}
		lists++
		if r.key != "t/_delta_log/" || r.startAfter != "t/_delta_log/0000000000000000001" {
			t.Errorf("LIST prefix %q start-after %q, want t/_delta_log/ from version 10", r.key, r.startAfter)
		}
		for _, k := range r.keys {
			if f, ok := delta.ParseLogName(filepath.Base(k)); ok && f.Version < 10 {
				t.Errorf("LIST returned %s, older than the checkpoint", k)
			}
		}
	}
	if lists == 0 {
		t.Error("loading the snapshot made no LIST")
	}
	readSnapshotFiles(t, st, snap)
	gets := 0
	for _, r := range proxy.take() {
		switch r.op {
		case "LIST":
			t.Errorf("reading the snapshot's files listed %q", r.key)
		case http.MethodGet:
			gets++
		}
	}
	if gets < len(snap.Files()) {
		t.Errorf("%d GETs for %d files", gets, len(snap.Files()))
	}
}

// readSnapshotFiles reads every live file whole and loads every deletion
// vector.
func readSnapshotFiles(t *testing.T, st *blobstore.Store, snap *delta.Snapshot) {
	ctx := context.Background()
	files, err := snap.LiveFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := delta.ReadAll(ctx, st, f.Key)
		if err != nil || int64(len(data)) != f.Add.Size {
			t.Fatalf("read %s: %d bytes of %d, %v", f.Key, len(data), f.Add.Size, err)
		}
		if _, err := snap.DeletedRows(ctx, f.Add); err != nil {
			t.Fatalf("deletion vector of %s: %v", f.Key, err)
		}
	}
}

// TestS3ProbeDetectsNonAtomicStore puts the S3 server behind a proxy that
// turns its 412 answers into 200, as a store that ignores If-None-Match
// would answer: ProbeAtomicPut must report ErrNotAtomic there and pass
// on the server itself.
func TestS3ProbeDetectsNonAtomicStore(t *testing.T) {
	srv := testenv.StartS3(t)
	proxy := newCountingProxy(t, srv.Addr)
	ctx := context.Background()
	if err := openStore(t, srv.BucketURL("t")).ProbeAtomicPut(ctx); err != nil {
		t.Fatalf("probe on versitygw: %v", err)
	}
	proxy.mu.Lock()
	proxy.ignoreIfAbsnt = true
	proxy.mu.Unlock()
	err := openStore(t, proxy.url(srv, "t")).ProbeAtomicPut(ctx)
	if !errors.Is(err, blobstore.ErrNotAtomic) {
		t.Fatalf("probe through a proxy ignoring If-None-Match: got %v, want %q", err, blobstore.ErrNotAtomic)
	}
	if ents, _ := os.ReadDir(filepath.Join(srv.BucketDir, "t", "_delta_log")); len(ents) != 0 {
		t.Errorf("the probes left %d entries in _delta_log", len(ents))
	}
}

// TestS3ServerRestart kills the S3 server in the middle of a ranged read
// and while it is down loads and reads: every call fails with an error
// naming the object (no panic, no hang), then succeeds once the server is
// back.
func TestS3ServerRestart(t *testing.T) {
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "t", testenv.Fixture(t, fixtureCheckpointed))
	ctx := context.Background()
	st := openStore(t, srv.BucketURL("t")).WithRequestTimeout(10 * time.Second)
	big := make([]byte, 32<<20)
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	if err := st.Put(ctx, "big.bin", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	rc, err := st.ReadRange(ctx, "big.bin", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, err := io.ReadAll(rc); err == nil || !strings.Contains(err.Error(), "/t/big.bin") {
		t.Errorf("read across the kill: %v, want an error naming the object", err)
	}
	rc.Close()
	t0 := time.Now()
	if _, err := delta.Open(st, delta.Options{}).Latest(ctx); err == nil || !strings.Contains(err.Error(), "s3://deltafs-test/t") {
		t.Errorf("latest with the server down: %v, want an error naming the table", err)
	}
	if _, err := delta.ReadAll(ctx, st, "big.bin"); err == nil {
		t.Error("read with the server down succeeded")
	}
	t.Logf("failing calls with the server down took %v", time.Since(t0).Round(time.Millisecond))
	srv.Start()
	snap, err := delta.Open(st, delta.Options{}).Latest(ctx)
	if err != nil || snap.Version() != 15 {
		t.Fatalf("latest after the restart: %v, %v", snap, err)
	}
	if got, err := delta.ReadAll(ctx, st, "big.bin"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read after the restart: %d bytes, %v", len(got), err)
	}
}

// TestObjectStoreBadCredentials sets a wrong secret for S3 and a wrong
// account key for Azure: loading a table must fail with ErrPermission,
// naming the URL and not the secret. (fake-gcs-server checks no
// credentials.)
func TestObjectStoreBadCredentials(t *testing.T) {
	const secret = "wrong-secret-4f9a1c"
	for _, tc := range []struct {
		kind  string
		start func(testing.TB) *testenv.Server
		spoil func(t *testing.T, srv *testenv.Server)
	}{
		{"s3", testenv.StartS3, func(t *testing.T, _ *testenv.Server) { t.Setenv("AWS_SECRET_ACCESS_KEY", secret) }},
		{"azure", testenv.StartAzure, func(t *testing.T, srv *testenv.Server) {
			conn := srv.Env["AZURE_STORAGE_CONNECTION_STRING"]
			t.Setenv("AZURE_STORAGE_CONNECTION_STRING", strings.Replace(conn, testenv.AzuriteKey, "d3Jvbmctc2VjcmV0LTRmOWExYw==", 1))
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv := tc.start(t)
			tc.spoil(t, srv)
			_, err := delta.Open(openStore(t, srv.BucketURL("t")), delta.Options{}).Latest(context.Background())
			if !errors.Is(err, blobstore.ErrPermission) {
				t.Fatalf("latest with a wrong key: got %v, want an error wrapping %q", err, blobstore.ErrPermission)
			}
			msg := err.Error()
			if !strings.Contains(msg, "://"+srv.Bucket+"/t") || strings.Contains(msg, secret) || strings.Contains(msg, "d3Jvbmct") {
				t.Errorf("error must name the table URL and not the secret: %s", msg)
			}
			t.Logf("%s", msg)
		})
	}
}

// TestS3Mount mounts one S3 table with mount.Mount and compares every file
// without a deletion vector under @latest with the local table's bytes.
func TestS3Mount(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	root := testenv.Fixture(t, fixtureCheckpointed)
	testenv.UploadDir(t, srv.URL, "warehouse/dv", root)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{URL: srv.BucketURL("warehouse/dv")}}})
	compared := 0
	for p, f := range liveFiles(t, latestSnapshot(t, root)) {
		if f.Add.DeletionVector != nil {
			continue
		}
		got, err := os.ReadFile(filepath.Join(mnt, "dv", "@latest", p))
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Key)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes through the mount differ from the table's %d", p, len(got), len(want))
		}
		compared++
	}
	if compared == 0 {
		t.Error("no file compared")
	}
}
