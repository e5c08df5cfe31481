package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/delta"
)

func stores(t *testing.T) map[string]*Store {
	ctx := context.Background()
	local, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mem, err := Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close(); mem.Close() })
	return map[string]*Store{"file": local, "mem": mem}
}

// TestPutIfAbsentOneWinner races writers for one commit key: exactly one
// may win, every loser gets ErrExists, and the winner's bytes are intact.
func TestPutIfAbsentOneWinner(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for trial := 0; trial < 20; trial++ {
				key := fmt.Sprintf("_delta_log/%020d.json", trial)
				var wins atomic.Int32
				var wg sync.WaitGroup
				for w := 0; w < 8; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						err := s.PutIfAbsent(ctx, key, []byte(fmt.Sprintf("writer %d\n", w)))
						switch {
						case err == nil:
							wins.Add(1)
						case !errors.Is(err, delta.ErrExists):
							t.Errorf("writer %d: %v", w, err)
						}
					}()
				}
				wg.Wait()
				if wins.Load() != 1 {
					t.Fatalf("trial %d: %d winners", trial, wins.Load())
				}
				data, err := delta.ReadAll(ctx, s, key)
				if err != nil || !strings.HasPrefix(string(data), "writer ") {
					t.Fatalf("trial %d: read back %q, %v", trial, data, err)
				}
			}
		})
	}
}

func TestListFromAndNotExist(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"_delta_log/00000000000000000000.json", "_delta_log/00000000000000000001.json",
				"_delta_log/00000000000000000002.json", "_delta_log/_sidecars/a.parquet", "part=1/x.parquet"} {
				if err := s.Put(ctx, k, strings.NewReader(k)); err != nil {
					t.Fatal(err)
				}
			}
			objs, err := s.List(ctx, "_delta_log/", "00000000000000000001")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.Key)
			}
			want := "_delta_log/00000000000000000001.json,_delta_log/00000000000000000002.json"
			if strings.Join(got, ",") != want {
				t.Errorf("list from 1: %v", got)
			}
			dirs, err := s.ListDirs(ctx, "")
			if err != nil || strings.Join(dirs, ",") != "_delta_log,part=1" {
				t.Errorf("dirs %v, %v", dirs, err)
			}
			if _, err := s.Stat(ctx, "nope"); !errors.Is(err, delta.ErrNotExist) {
				t.Errorf("stat missing: %v", err)
			}
			rc, err := s.ReadRange(ctx, "part=1/x.parquet", 5, 3)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != "1/x" {
				t.Errorf("range read %q", b)
			}
		})
	}
}

func TestLocalLeavesNoTempOrAttrs(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "_delta_log/_last_checkpoint", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".attrs") || strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("litter in _delta_log: %s", e.Name())
		}
	}
}

func TestRedact(t *testing.T) {
	got := Redact("s3://user:pw@bucket/t?region=x&secret_access_key=abc&sig=zz")
	if strings.Contains(got, "abc") || strings.Contains(got, "pw") || strings.Contains(got, "zz") || !strings.Contains(got, "region=x") {
		t.Errorf("Redact: %s", got)
	}
	for in, want := range map[string]string{
		"mem://": "mem://",
		"s3://b/t?endpoint=http://h:1&use_path_style=true&X-Amz-Signature=s": "s3://b/t?endpoint=http://h:1&use_path_style=true&X-Amz-Signature=REDACTED",
		"/local/path?key=x": "/local/path?key=x", // a path, not a URL
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStartAfterHook checks the listing hints given to S3 and GCS: S3's
// exclusive StartAfter sorts just before the start key, GCS's inclusive
// StartOffset is the key; a continued S3 listing is left alone.
func TestStartAfterHook(t *testing.T) {
	hook := startAfter("t/_delta_log/00000000000000000010")
	in := &s3.ListObjectsV2Input{}
	if err := hook(asTo(in)); err != nil || aws.ToString(in.StartAfter) != "t/_delta_log/0000000000000000001" {
		t.Errorf("S3 StartAfter %q, %v", aws.ToString(in.StartAfter), err)
	}
	cont := &s3.ListObjectsV2Input{ContinuationToken: aws.String("tok")}
	if err := hook(asTo(cont)); err != nil || cont.StartAfter != nil {
		t.Errorf("continued listing got StartAfter %q", aws.ToString(cont.StartAfter))
	}
	q := &storage.Query{}
	if err := hook(asTo(q)); err != nil || q.StartOffset != "t/_delta_log/00000000000000000010" {
		t.Errorf("GCS StartOffset %q, %v", q.StartOffset, err)
	}
	if err := hook(func(any) bool { return false }); err != nil {
		t.Errorf("other backend: %v", err)
	}
	if startAfter("") != nil {
		t.Error("a listing from the start needs no hook")
	}
}

// asTo returns an As function that hands out p, like a gocloud driver's.
func asTo[T any](p *T) func(any) bool {
	return func(i any) bool {
		pp, ok := i.(**T)
		if ok {
			*pp = p
		}
		return ok
	}
}

func TestLocationNames(t *testing.T) {
	for _, tc := range []struct{ display, root, key, sub string }{
		{"s3://b/w/t?endpoint=http://h:1&region=r", "s3://b/w/t?endpoint=http://h:1&region=r",
			"s3://b/w/t/_delta_log/x.json?endpoint=http://h:1&region=r", "s3://b/w/t/c?endpoint=http://h:1&region=r"},
		{"gs://b", "gs://b", "gs://b/_delta_log/x.json", "gs://b/c"},
		{"mem://", "mem://", "mem://_delta_log/x.json", "mem://c"},
		{"/data/t/", "/data/t", "/data/t/_delta_log/x.json", "/data/t/c"},
	} {
		l := parseWhere(tc.display)
		if l.String() != tc.root || l.at("_delta_log/x.json") != tc.key || l.sub("c/").String() != tc.sub {
			t.Errorf("%s: root %s, key %s, sub %s", tc.display, l, l.at("_delta_log/x.json"), l.sub("c/"))
		}
	}
}

// TestRequestTimeout stalls a store's answers with a BeforeList hook that
// waits for the context: List must fail with ErrTimeout soon after the
// timeout, naming the store.
func TestRequestTimeout(t *testing.T) {
	s, err := Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s = s.WithRequestTimeout(50 * time.Millisecond)
	g := s.newGuard(context.Background())
	defer g.done()
	g.arm()
	select {
	case <-g.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("guard did not fire")
	}
	err = s.wrap("list", "_delta_log/", g.check(g.ctx.Err()))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "mem://_delta_log/") {
		t.Errorf("timeout error: %v", err)
	}
	// Disarmed between waits: a slow caller is not a slow store.
	g2 := s.newGuard(context.Background())
	defer g2.done()
	g2.arm()
	g2.disarm()
	time.Sleep(120 * time.Millisecond)
	if g2.ctx.Err() != nil {
		t.Error("disarmed guard fired")
	}
}

func TestProbeAtomicPut(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			if err := s.ProbeAtomicPut(ctx); err != nil {
				t.Fatalf("probe: %v", err)
			}
			if d := s.LocalDir(); d != "" {
				if _, err := os.Stat(filepath.Join(d, "_delta_log", "_deltafs_probe")); !os.IsNotExist(err) {
					t.Errorf("probe dir left behind: %v", err)
				}
			}
		})
	}
}
