package testenv

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"
)

// TestServers starts each object-store server, uploads a small tree with
// UploadDir, reads it back through gocloud, and for S3 checks that a
// restart keeps the data and that the objects are files in BucketDir.
func TestServers(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"a.txt": "alpha", "d/b.txt": "bravo", "d/e/c.bin": "charlie"}
	for k, v := range files {
		p := filepath.Join(src, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		kind  string
		start func(testing.TB) *Server
	}{{"s3", StartS3}, {"gcs", StartGCS}, {"azure", StartAzure}} {
		t.Run(tc.kind, func(t *testing.T) {
			t0 := time.Now()
			s := tc.start(t)
			t.Logf("%s server ready in %v at %s", tc.kind, time.Since(t0).Round(time.Millisecond), s.URL)
			if len(s.Env) == 0 {
				t.Error("no environment for the openers")
			}
			UploadDir(t, s.URL, "pre/fix", src)
			checkObjects(t, s.URL, "pre/fix/", files)
			if tc.kind != "s3" {
				return
			}
			if data, err := os.ReadFile(filepath.Join(s.BucketDir, "pre", "fix", "d", "b.txt")); err != nil || string(data) != "bravo" {
				t.Errorf("BucketDir file: %q, %v", data, err)
			}
			s.Stop()
			if err := s.ready(context.Background()); err == nil {
				t.Fatal("stopped server still answers")
			}
			s.Start()
			checkObjects(t, s.BucketURL("pre"), "fix/", files)
		})
	}
}

// checkObjects lists the bucket of bucketURL under prefix and reads every
// object back, comparing with files.
func checkObjects(t *testing.T, bucketURL, prefix string, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	b, root, err := openTestBucket(ctx, bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	prefix = joinKey(root, strings.TrimSuffix(prefix, "/")) + "/"
	var got []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("list %s: %v", prefix, err)
		}
		got = append(got, strings.TrimPrefix(obj.Key, prefix))
	}
	var want []string
	for k := range files {
		want = append(want, k)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for k, v := range files {
		data, err := b.ReadAll(ctx, prefix+k)
		if err != nil || string(data) != v {
			t.Errorf("read %s: %q, %v", k, data, err)
		}
	}
}

func TestBucketURL(t *testing.T) {
	s := &Server{URL: "s3://b?endpoint=http://x&region=r"}
	if got := s.BucketURL("/t/orders/"); got != "s3://b/t/orders?endpoint=http://x&region=r" {
		t.Errorf("BucketURL: %s", got)
	}
	s.URL = "gs://b"
	if got := s.BucketURL("t"); got != "gs://b/t" {
		t.Errorf("BucketURL: %s", got)
	}
}
