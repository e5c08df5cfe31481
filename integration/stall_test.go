package integration

// A store that accepts a PUT and never answers must not hang close(): the
// commit is capped by Config.CommitTimeout, the answer is
// EIO with the reason in _status.jsonl, and a commit whose answer was
// lost is never committed a second time.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// stallProxy forwards to an S3 server; while stallData, a PUT of a data
// file is read and never answered; while stallCommit, a PUT of a commit
// is forwarded (it lands) and its answer never sent.
type stallProxy struct {
	rp   *httputil.ReverseProxy
	addr string

	mu                     sync.Mutex
	stallData, stallCommit bool
	stalled                int
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	tu, err := url.Parse("http://" + target)
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{rp: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(tu)
		r.Out.Host = r.In.Host // signed by the client
	}}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.addr = srv.Listener.Addr().String()
	return p
}

func (p *stallProxy) set(data, commit bool) {
	p.mu.Lock()
	p.stallData, p.stallCommit = data, commit
	p.mu.Unlock()
}

func (p *stallProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	data := p.stallData && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/part-")
	commit := p.stallCommit && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/_delta_log/") && strings.HasSuffix(r.URL.Path, ".json")
	if data || commit {
		p.stalled++
	}
	p.mu.Unlock()
	switch {
	case data:
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	case commit:
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		<-r.Context().Done()
	default:
		p.rp.ServeHTTP(w, r)
	}
}

func TestS3StalledPutIsEIOWithinTheCap(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "warehouse/basic", testenv.Fixture(t, fixtureAppend))
	proxy := newStallProxy(t, srv.Addr)
	u := strings.Replace(srv.BucketURL("warehouse/basic"), srv.Addr, proxy.addr, 1)
	const cap = 3 * time.Second
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: u}}, CommitTimeout: cap})
	inbox := filepath.Join(mnt, "t", "inbox")
	version := func() int64 {
		s, err := delta.Open(openStore(t, srv.BucketURL("warehouse/basic")), delta.Options{}).Latest(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return s.Version()
	}
	v0 := version()
	data := inboxCases["unpartitioned"].data(t)
	write := func(name string) (time.Duration, error) {
		start := time.Now()
		err := os.WriteFile(filepath.Join(inbox, name), data, 0o644)
		return time.Since(start), err
	}
	lastStatus := func(name string) inboxEvent {
		var last inboxEvent
		for _, e := range inboxStatus(t, filepath.Join(mnt, "t")) {
			if e.File == name {
				last = e
			}
		}
		return last
	}

	// The data file's PUT is never answered: nothing was committed.
	proxy.set(true, false)
	took, err := write("stalled.parquet")
	if !errors.Is(err, syscall.EIO) || took > cap+10*time.Second {
		t.Fatalf("close() with a stalled data PUT: %v after %v, want EIO within about %v", err, took, cap)
	}
	if e := lastStatus("stalled.parquet"); e.Errno != "EIO" || !strings.Contains(e.Error, "did not finish") {
		t.Errorf("status of the stalled commit: %+v, want EIO saying it did not finish", e)
	}
	if v := version(); v != v0 {
		t.Errorf("version %d after a stalled data PUT, want %d", v, v0)
	}

	// The commit lands but its answer never comes: the outcome is
	// unknown (EIO), and it is in the log once.
	proxy.set(false, true)
	took, err = write("lost-answer.parquet")
	if err != nil && !errors.Is(err, syscall.EIO) || took > cap+10*time.Second {
		t.Fatalf("close() with a lost commit answer: %v after %v, want 0 or EIO within about %v", err, took, cap)
	}
	if err != nil {
		if e := lastStatus("lost-answer.parquet"); e.Errno != "EIO" || !strings.Contains(e.Error, "unknown") {
			t.Errorf("status of the lost answer: %+v, want EIO saying the outcome is unknown", e)
		}
	}
	proxy.set(false, false)
	if v := version(); v != v0+1 {
		t.Errorf("version %d after a commit whose answer was lost, want %d (committed once)", v, v0+1)
	}
	proxy.mu.Lock()
	stalled := proxy.stalled
	proxy.mu.Unlock()
	if stalled < 2 {
		t.Errorf("%d requests stalled, want at least 2 (the test did not test)", stalled)
	}
	// The store answers again: appends work.
	if _, err := write("after.parquet"); err != nil {
		t.Fatalf("append once the store answers: %v", err)
	}
	if v := version(); v != v0+2 {
		t.Errorf("version %d, want %d", v, v0+2)
	}
}
