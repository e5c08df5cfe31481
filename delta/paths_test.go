package delta_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func TestResolvePath(t *testing.T) {
	const local = "/data/t"
	const s3 = "s3://bucket/wh/t?region=eu-west-1"
	tests := []struct {
		root, path string
		want       string
		err        error
	}{
		// Relative paths: decoded exactly once, '+' kept.
		{local, "part-0.parquet", "part-0.parquet", nil},
		{local, "_2=bar+%252522/part-1.parquet", "_2=bar+%2522/part-1.parquet", nil},
		{local, "bar%2Dbar.snappy.parquet", "bar-bar.snappy.parquet", nil},
		{local, "a%20b/c+d%3Ae.parquet", "a b/c+d:e.parquet", nil},
		{local, "date=2021-01-01 10:00:00/x", "date=2021-01-01 10:00:00/x", nil},
		// Absolute local paths and file URIs under the root.
		{local, "/data/t/a.parquet", "a.parquet", nil},
		{local, "file:/data/t/a%20b/c.parquet", "a b/c.parquet", nil},
		{local, "file:///data/t/x%25y", "x%y", nil},
		{local, "file://localhost/data/t/x", "x", nil},
		{"/data/t/", "file:/data/t/sub/x", "sub/x", nil},
		{"file:///data/t", "/data/t/x", "x", nil},
		{"/", "file:/data/t/x", "data/t/x", nil},
		// Object stores.
		{s3, "s3://bucket/wh/t/p=1/a.parquet", "p=1/a.parquet", nil},
		{s3, "s3a://bucket/wh/t/a%2Bb.parquet", "a+b.parquet", nil},
		{"s3://bucket", "s3://bucket/a/b", "a/b", nil},
		// Outside the root: legal Delta that a Storage rooted at the table cannot serve.
		{local, "file:/data/tt/x", "", delta.ErrUnsupportedFeature},
		{local, "file:/data/t", "", delta.ErrUnsupportedFeature},
		{local, "/data/t/../u/x", "", delta.ErrUnsupportedFeature},
		{local, "file://otherhost/data/t/x", "", delta.ErrUnsupportedFeature},
		{local, "s3://bucket/data/t/x", "", delta.ErrUnsupportedFeature},
		{s3, "s3://other/wh/t/x", "", delta.ErrUnsupportedFeature},
		{s3, "s3://bucket/wh/t2/x", "", delta.ErrUnsupportedFeature},
		{s3, "gs://bucket/wh/t/x", "", delta.ErrUnsupportedFeature},
		{s3, "file:/wh/t/x", "", delta.ErrUnsupportedFeature},
		// Relative keys that escape the root or are not plain keys.
		{local, "..//Users/x/foo.parquet", "", delta.ErrUnsupportedFeature},
		{local, "a/../b", "", delta.ErrUnsupportedFeature},
		{local, "%2E%2E/x", "", delta.ErrUnsupportedFeature},
		{local, "./x", "", delta.ErrUnsupportedFeature},
		{local, "%2Fetc/passwd", "", delta.ErrUnsupportedFeature},
		// Malformed.
		{local, "", "", delta.ErrCorruptLog},
		{local, "a%zzb", "", delta.ErrCorruptLog},
		{local, "a%2", "", delta.ErrCorruptLog},
	}
	for _, tt := range tests {
		got, err := delta.ResolvePath(tt.root, tt.path)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("ResolvePath(%q, %q) = %q, %v; want error %v", tt.root, tt.path, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolvePath(%q, %q) = %q, %v; want %q", tt.root, tt.path, got, err, tt.want)
		}
	}
}

// TestResolvePathEscapedCharsGolden resolves every add path of a table whose
// partition directories contain '%' and '+', and checks the object exists.
func TestResolvePathEscapedCharsGolden(t *testing.T) {
	dir := testenv.Fixture(t, "delta-kernel-rs/golden-data-reader-escaped-chars")
	ctx := context.Background()
	store, err := blobstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	adds := pathsFixtureAdds(t, dir)
	if len(adds) != 3 {
		t.Fatalf("found %d add actions, want 3", len(adds))
	}
	for _, a := range adds {
		key, err := delta.ResolvePath(store.String(), a.Path)
		if err != nil {
			t.Fatalf("ResolvePath(%q): %v", a.Path, err)
		}
		if !strings.HasPrefix(key, "_2=bar+%25") {
			t.Errorf("ResolvePath(%q) = %q, want the on-disk dir _2=bar+%%25NN", a.Path, key)
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key))); err != nil {
			t.Errorf("key %q of %q: %v", key, a.Path, err)
		}
		if info, err := store.Stat(ctx, key); err != nil || info.Size != a.Size {
			t.Errorf("Stat(%q) = %+v, %v; want size %d", key, info, err, a.Size)
		}
	}
}

// TestResolvePathAbsolutePathsGolden: this table was written by hand with a
// path that climbs out of the table ("..//Users/...") and an escaped
// relative one. The first must be refused clearly, the second resolved.
func TestResolvePathAbsolutePathsGolden(t *testing.T) {
	dir := testenv.Fixture(t, "delta-kernel-rs/golden-data-reader-absolute-paths-escaped-chars")
	adds := pathsFixtureAdds(t, dir)
	if len(adds) != 2 {
		t.Fatalf("found %d add actions, want 2", len(adds))
	}
	_, err := delta.ResolvePath(dir, adds[0].Path)
	if !errors.Is(err, delta.ErrUnsupportedFeature) || !strings.Contains(err.Error(), adds[0].Path) {
		t.Errorf("ResolvePath(%q) err = %v; want ErrUnsupportedFeature naming the path", adds[0].Path, err)
	}
	key, err := delta.ResolvePath(dir, adds[1].Path)
	if err != nil || key != "bar-bar.snappy.parquet" {
		t.Errorf("ResolvePath(%q) = %q, %v; want bar-bar.snappy.parquet", adds[1].Path, key, err)
	}
}

// pathsFixtureAdds returns the add actions of the table's commit files, in
// log order. Commits that do not parse (negative fixtures) are skipped.
func pathsFixtureAdds(t *testing.T, tableDir string) []*delta.Add {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tableDir, "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var adds []*delta.Add
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		err = action.Parse(data, func(a *delta.Action) error {
			if a.Add != nil {
				adds = append(adds, a.Add)
			}
			return nil
		})
		if err != nil {
			t.Logf("skip %s: %v", f, err)
		}
	}
	return adds
}
