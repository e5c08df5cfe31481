package blobstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta"
)

// TestCheckKeyMatchesFileblob writes keys through the local store's
// fileblob bucket and checks that CheckKey refuses exactly those that
// fileblob stores under another name than the key (so a log naming the
// key would name no file), and that Put refuses them too.
func TestCheckKeyMatchesFileblob(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys := []string{
		"plain/part-0.parquet",
		"letter=a%20b/part-1.parquet",
		"p=../part-2.parquet",
		"p=./part-3.parquet",
		"t__0x41__x/part-4.parquet",
		"tab\there/part-5.parquet",
		"new\nline/part-6.parquet",
		"a//b/part-7.parquet",
		"p=..x/part-8.parquet",
	}
	for _, key := range keys {
		if err := s.bucket.WriteAll(ctx, key, []byte("x"), nil); err != nil {
			t.Fatalf("write %q: %v", key, err)
		}
		_, statErr := os.Stat(filepath.Join(dir, filepath.FromSlash(key)))
		exact := statErr == nil
		ckErr := s.CheckKey(key)
		if exact != (ckErr == nil) {
			t.Errorf("key %q: stored as named %v, CheckKey says %v", key, exact, ckErr)
		}
		if ckErr != nil && !errors.Is(ckErr, delta.ErrUnstorableKey) {
			t.Errorf("key %q: %v does not wrap ErrUnstorableKey", key, ckErr)
		}
		if err := s.Put(ctx, key, strings.NewReader("y")); (err == nil) != exact {
			t.Errorf("Put %q: %v (stored as named: %v)", key, err, exact)
		}
	}
}

// TestCheckKeyDrivers: the rules of the object-store drivers (gocloud
// v0.47's escapeKey of each): Azure escapes '%' (every Hive-escaped
// value), S3 and GCS do not; all escape "../".
func TestCheckKeyDrivers(t *testing.T) {
	cases := []struct {
		driver, key string
		ok          bool
	}{
		{"s3", "d=2024-01-01%2010%3A00/p.parquet", true},
		{"gs", "d=2024-01-01%2010%3A00/p.parquet", true},
		{"azblob", "d=2024-01-01%2010%3A00/p.parquet", false},
		{"s3", "p=../x.parquet", false},
		{"gs", "p=../x.parquet", false},
		{"azblob", "p=../x.parquet", false},
		{"s3", "a\tb/x.parquet", false},
		{"gs", "a\tb/x.parquet", true},
		{"gs", "a\nb/x.parquet", false},
		{"mem", "p=../x.parquet", true},
		{"s3", "a__0x2f__b/x.parquet", false},
	}
	for _, c := range cases {
		if got := rewritten(c.driver, c.key) == ""; got != c.ok {
			t.Errorf("%s %q: stored as named %v, want %v", c.driver, c.key, got, c.ok)
		}
	}
}
