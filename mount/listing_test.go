package mount

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/globtable"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// listingTable writes a table of n small files in the partition
// region=r00 at version 0 and one more file at version 1, and returns its
// root.
func listingTable(t *testing.T, n int) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "t")
	if err := globtable.Generate(globtable.Spec{Dir: root, Files: n + 1, Partitions: 1, PerCommit: n}); err != nil {
		t.Fatal(err)
	}
	return root
}

// lsL lists dir a chunk at a time, lstat-ing each entry (so deciding every
// file's size), and returns each file's size.
func lsL(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sizes := map[string]int64{}
	for {
		ents, err := d.ReadDir(64)
		for _, e := range ents {
			fi, err := os.Lstat(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatalf("lstat %s: %v", e.Name(), err)
			}
			sizes[e.Name()] = fi.Size()
		}
		if err == io.EOF {
			return sizes
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// An ls -l of a snapshot directory whose files' sizes are known (decided
// by an earlier listing, or by the warm-up its first stat starts) has its
// stats answered from the READDIRPLUS replies, not one LOOKUP per file,
// and every size so given is the size of the bytes a read returns; a
// listing without stats (find, a glob) is given no file attributes.
func TestListingStatsFromReaddirplus(t *testing.T) {
	testenv.RequireFUSE(t)
	const files = 600
	root := listingTable(t, files)
	for _, parts := range []bool{false, true} {
		t.Run(fmt.Sprintf("partition-columns=%v", parts), func(t *testing.T) {
			cfg := Config{
				Sources:    []Source{{Name: "t", URL: root}},
				Mountpoint: t.TempDir(), CacheDir: t.TempDir(), ReadOnly: true, PartitionColumns: parts,
				Logger: slog.New(slog.DiscardHandler),
			}
			srv, err := Mount(context.Background(), cfg)
			if err != nil {
				t.Fatalf("mount: %v", err)
			}
			defer func() {
				if err := srv.Unmount(); err != nil {
					t.Errorf("unmount: %v", err)
				}
			}()
			lookups := func() float64 { return scrape(t, srv)[`deltafs_fuse_request_duration_seconds_count{op="lookup"}`] }

			// A listing alone looks nothing up. (The kernel keeps the listing:
			// a later ls -l of this directory reads it from its cache, with no
			// READDIRPLUS, and looks each file up.)
			v0 := filepath.Join(cfg.Mountpoint, "t", "@v0", "region=r00")
			v1 := filepath.Join(cfg.Mountpoint, "t", "@v1", "region=r00")
			before := lookups()
			ents, err := os.ReadDir(v0)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != files {
				t.Fatalf("@v0 lists %d files, want %d", len(ents), files)
			}
			if n := lookups() - before; n > 3 {
				t.Errorf("a plain listing made %v LOOKUPs, want none per file", n)
			}

			// ls -l of @v0 decides every size (LOOKUPs, or READDIRPLUS after the
			// warm-up), then ls -l of @v1 finds them known.
			first := lsL(t, v0)
			if len(first) != files {
				t.Fatalf("@v0 lists %d files, want %d", len(first), files)
			}
			// GNU ls, as a user runs it: it stats each entry as readdir returns
			// it, so the kernel asks for attributes chunk after chunk.
			before = lookups()
			out, err := exec.Command("ls", "-ln", "--time-style=+%s", v1).Output()
			if err != nil {
				t.Fatalf("ls -l: %v", err)
			}
			n := lookups() - before
			t.Logf("ls -l of %d files: %v LOOKUPs", files+1, n)
			if n > files/2 {
				t.Errorf("ls -l of %d files with known sizes made %v LOOKUPs, want most stats answered by READDIRPLUS", files+1, n)
			}
			second := map[string]int64{}
			for line := range strings.Lines(string(out)) {
				f := strings.Fields(line)
				if len(f) != 7 {
					continue // "total N"
				}
				size, err := strconv.ParseInt(f[4], 10, 64)
				if err != nil {
					t.Fatalf("ls -l line %q: %v", line, err)
				}
				second[f[6]] = size
			}
			if len(second) != files+1 {
				t.Fatalf("ls -l of @v1 shows %d files, want %d:\n%s", len(second), files+1, out)
			}
			for name, size := range second {
				b, err := os.ReadFile(filepath.Join(v1, name))
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(b)) != size {
					t.Fatalf("%s: stat says %d bytes, a read gives %d", name, size, len(b))
				}
				if want, ok := first[name]; ok && want != size {
					t.Fatalf("%s: %d bytes in @v0, %d in @v1", name, want, size)
				}
			}
			if parts {
				// The partition column is in the files: a file's size is not the
				// stored one.
				st, err := os.Stat(filepath.Join(root, "region=r00", "part-0000000.parquet"))
				if err != nil {
					t.Fatal(err)
				}
				if second["part-0000000.parquet"] == st.Size() {
					t.Errorf("with partition columns, a file is served with its stored size %d", st.Size())
				}
			}
		})
	}
}
