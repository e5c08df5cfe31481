package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/cdfexpect"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// The mount's @changes tree gives, through a plain DuckDB glob over
// TABLE/@changes/vA..vB/*.parquet, exactly the change rows delta-kernel-rs
// expects of every shared CDF table (the ranges of its cdf.rs; an open
// end as vA..); its README says how to name a range.
func TestChangesTreeAsKernelExpects(t *testing.T) {
	cases, err := cdfexpect.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	var sources []mount.Source
	seen := map[string]bool{}
	for _, c := range cases {
		name := filepath.Base(c.Fixture)
		if !seen[name] {
			seen[name] = true
			sources = append(sources, mount.Source{Name: name, URL: testenv.Fixture(t, c.Fixture)})
		}
	}
	mnt := mountFS(t, mount.Config{Sources: sources})
	readme, err := os.ReadFile(filepath.Join(mnt, "cdf-table", "@changes", "README.txt"))
	if err != nil || !strings.Contains(string(readme), "v10..v20") {
		t.Fatalf("@changes/README.txt: %q, %v", readme, err)
	}
	for _, c := range cases {
		rng := fmt.Sprintf("v%d..", c.From)
		if c.To != nil {
			rng += "v" + strconv.FormatInt(*c.To, 10)
		}
		dir := filepath.Join(mnt, filepath.Base(c.Fixture), "@changes", rng)
		t.Run(c.Test+"/"+filepath.Base(c.Fixture)+"/"+rng, func(t *testing.T) {
			rows := duckdbQuery(t, "select "+c.Select()+" from read_parquet('"+dir+"/*.parquet')")
			if rows == nil {
				return
			}
			got := make([]string, len(rows))
			for i, r := range rows {
				got[i] = strings.Join(r, "|")
			}
			if got, want := cdfexpect.Normalize(got), c.Want(); !slices.Equal(got, want) {
				t.Errorf("%s:\n%s\nwant (kernel-rs %s):\n%s", dir, strings.Join(got, "\n"), c.Test, strings.Join(want, "\n"))
			}
		})
	}
}

// A range the feed cannot give is a directory holding only
// _deltafs_error.txt with the reason (not an I/O error on read); a name
// that is no range is ENOENT.
func TestChangesTreeRefusals(t *testing.T) {
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{
		{Name: "cdf", URL: testenv.Fixture(t, "delta-kernel-rs/table-with-cdf")},
		{Name: "plain", URL: testenv.Fixture(t, "dat/basic_append")},
	}})
	for _, c := range []struct{ path, want string }{
		{"cdf/@changes/v2..v3", "change data feed is not enabled"},
		{"cdf/@changes/v3..v4", "schema"},
		{"plain/@changes/v0..", "change data feed is not enabled"},
	} {
		dir := filepath.Join(mnt, c.path)
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 1 || entries[0].Name() != "_deltafs_error.txt" {
			t.Errorf("ls %s: %v, %v; want only _deltafs_error.txt", c.path, entries, err)
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, "_deltafs_error.txt"))
		if err != nil || !strings.Contains(string(text), c.want) {
			t.Errorf("%s/_deltafs_error.txt: %q, %v; want it to say %q", c.path, text, err, c.want)
		}
	}
	for _, bad := range []string{"cdf/@changes/v3", "cdf/@changes/v4..v3", "cdf/@changes/latest..", "cdf/@changes/x..y"} {
		if _, err := os.Stat(filepath.Join(mnt, bad)); !os.IsNotExist(err) {
			t.Errorf("stat %s: %v, want ENOENT", bad, err)
		}
	}
	if _, err := os.ReadDir(filepath.Join(mnt, "cdf", "@changes", "v0..v1")); err != nil {
		t.Errorf("ls a range the feed gives: %v", err)
	}
}

// cdfRow is a row of cdf-table-simple (one long column, id).
type cdfRow struct {
	ID *int64 `parquet:"id,optional"`
}

// An append through the inbox to a table with the change data feed (a
// blind append: adds only, which the protocol's "Change Data Files" lets
// a writer commit without CDC files) shows in @changes as inserts of
// exactly its rows, at its version, and leaves the earlier feed as it was.
func TestInboxAppendShowsInChanges(t *testing.T) {
	_, tdir := mountCopy(t, "delta-kernel-rs/cdf-table-simple", mount.Config{})
	before := duckdbQuery(t, "select count(*) from read_parquet('"+filepath.Join(tdir, "@changes", "v0..v2")+"/*.parquet')")
	data := parquetBytes(t, []cdfRow{{ID: ptr(int64(100))}, {ID: ptr(int64(101))}})
	if err := os.WriteFile(filepath.Join(tdir, "inbox", "more.parquet"), data, 0o644); err != nil {
		t.Fatalf("append: %v", err)
	}
	rows := duckdbQuery(t, "select id, _change_type, _commit_version from read_parquet('"+filepath.Join(tdir, "@changes", "v3..")+"/*.parquet') order by id")
	if rows != nil && fmt.Sprint(rows) != "[[100 insert 3] [101 insert 3]]" {
		t.Errorf("@changes/v3..: %v, want the two appended rows as inserts at version 3", rows)
	}
	after := duckdbQuery(t, "select count(*) from read_parquet('"+filepath.Join(tdir, "@changes", "v0..v2")+"/*.parquet')")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("the feed of v0..v2 changed with the append: %v, then %v", before, after)
	}
}

// A change file whose data is gone (vacuumed) still stats, and its open
// fails: a DuckDB glob over the range errors instead of counting the
// other files' rows as if the range were whole.
func TestChangesTreeMissingFileFailsTheGlob(t *testing.T) {
	root, tdir := mountCopy(t, "delta-kernel-rs/cdf-table-simple", mount.Config{})
	// Remove one data file (each is some version's change file) before
	// the range is listed.
	parquets, err := filepath.Glob(filepath.Join(root, "*.parquet"))
	if err != nil || len(parquets) == 0 {
		t.Fatalf("data files: %v, %v", parquets, err)
	}
	gone := filepath.Base(parquets[0])
	if err := os.Remove(parquets[0]); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tdir, "@changes", "v0..v2")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ls %s: %v", dir, err)
	}
	found := false
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), gone) {
			found = true
			if _, err := os.Stat(filepath.Join(dir, e.Name())); err != nil {
				t.Errorf("stat of a change file whose data is gone: %v, want it listed with a size", err)
			}
		}
	}
	if !found {
		t.Fatalf("no change file of %s in %v", gone, entries)
	}
	rows, err, ok := duckdbTry(t, "select count(*) from read_parquet('"+dir+"/*.parquet')")
	if ok && err == nil {
		t.Errorf("a DuckDB glob over a range with a file gone gave %v, want an error", rows)
	}
}
