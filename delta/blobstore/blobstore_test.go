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
}
