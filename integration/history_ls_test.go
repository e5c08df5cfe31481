package integration

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// opCount scrapes the mount's count of requests of op to the kernel
// (family "fuse") or to table storage ("storage").
func opCount(t *testing.T, srv *mount.Server, family, op string) int {
	return metricValue(t, srv, `deltafs_`+family+`_request_duration_seconds_count\{op="`+op+`"\}`)
}

// metricValue scrapes the value of the mount's metric whose name and
// labels match the regular expression series.
func metricValue(t *testing.T, srv *mount.Server, series string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := regexp.MustCompile(`(?m)^` + series + ` (\d+)`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// A history browsed with ls: ls -l of a table of 3,000 versions with
// in-commit timestamps is answered by READDIRPLUS (the kernel asks for it
// chunk after chunk while ls stats the entries: READDIRPLUS_AUTO), with
// no LOOKUP per version and each @vN stamped with its commit's time; a
// plain ls of the same table on a fresh mount reads the commits of its
// first chunk at most, not one per version.
func TestHistoryListing(t *testing.T) {
	testenv.RequireFUSE(t)
	const commits = 3000
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: commits, FilesPerCommit: 1, CheckpointEvery: 1000, ICT: true}); err != nil {
		t.Fatal(err)
	}
	for _, long := range []bool{true, false} {
		cfg := mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, Mountpoint: t.TempDir(), CacheDir: t.TempDir(), ReadOnly: true}
		srv, err := mount.Mount(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(cfg.Mountpoint, "t")
		lookups, reads := opCount(t, srv, "fuse", "lookup"), opCount(t, srv, "storage", "read")
		args := []string{"-1", dir}
		if long {
			args = []string{"-l", "--time-style=+%s", dir}
		}
		out, err := exec.Command("ls", args...).Output()
		if err != nil {
			srv.Unmount()
			t.Fatalf("ls %v: %v", args, err)
		}
		lookups, reads = opCount(t, srv, "fuse", "lookup")-lookups, opCount(t, srv, "storage", "read")-reads
		t.Logf("ls %v: %d LOOKUPs, %d storage reads", args[:len(args)-1], lookups, reads)
		if long {
			checkLongListing(t, string(out), commits)
			if lookups > 10 {
				t.Errorf("ls -l of %d versions sent %d LOOKUPs, want a few (the history file, @latest)", commits, lookups)
			}
		} else {
			if n := strings.Count(string(out), "@v"); n != commits {
				t.Errorf("ls listed %d versions, want %d", n, commits)
			}
			if reads > 600 { // the first READDIRPLUS chunk's commits, a round of read-ahead
				t.Errorf("a plain ls of %d versions made %d storage reads, want no more than the first chunk's", commits, reads)
			}
		}
		if err := srv.Unmount(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLongListing checks that ls -l --time-style=+%s shows every @vN
// with its commit time.
func checkLongListing(t *testing.T, out string, commits int) {
	t.Helper()
	re := regexp.MustCompile(`(?m) (\d+) @v(\d+)$`)
	ms := re.FindAllStringSubmatch(out, -1)
	if len(ms) != commits {
		t.Fatalf("ls -l showed %d versions, want %d", len(ms), commits)
	}
	for _, m := range ms {
		ts, _ := strconv.ParseInt(m[1], 10, 64)
		v, _ := strconv.ParseInt(m[2], 10, 64)
		if want := scalegen.CommitTime(v).Unix(); ts != want {
			t.Fatalf("@v%d: time %d, want %d", v, ts, want)
		}
	}
}
