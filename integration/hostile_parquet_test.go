package integration

// Hostile Parquet files through the inbox: each is refused
// with its reason while the mount serves on, within the documented
// memory bound, and a plain DuckDB glob of @latest still reads.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit/hostilepq"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// basicAppendFile is an honest file of dat/basic_append (letter, number,
// a_float) with n rows, number 0..n-1, and footer statistics for number.
func basicAppendFile(n int) hostilepq.File {
	letters := make([]*string, n)
	for i := range letters {
		s := string(rune('a' + i%26))
		letters[i] = &s
	}
	return hostilepq.File{Columns: []hostilepq.Column{
		{Name: "letter", Type: format.ByteArray, Optional: true, Pages: []hostilepq.Page{hostilepq.StringPage(true, letters)}},
		{Name: "number", Type: format.Int64, Optional: true, Pages: []hostilepq.Page{hostilepq.Int64Page(true, hostilepq.Ptrs(n, nil))},
			Stats: &format.Statistics{NullCount: 0, MinValue: hostilepq.Int64(0), MaxValue: hostilepq.Int64(int64(n - 1))}},
	}}
}

// vmHWM returns the process's peak RSS in bytes.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

func TestInboxRefusesHostileParquet(t *testing.T) {
	if testenv.NodeDir(t, "@duckdb/node-api") == "" {
		return
	}
	mutate := func(fn func(f *hostilepq.File)) []byte {
		f := basicAppendFile(1000)
		fn(&f)
		return f.Bytes()
	}
	cases := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"deep", mutate(func(f *hostilepq.File) { f.DeepChain = 100_000 }), "schema nested deeper than 64 levels"},
		{"bomb", mutate(func(f *hostilepq.File) {
			*f = basicAppendFile(1)
			f.Columns[1].Optional = false
			f.Columns[1].Codec = format.Gzip
			f.Columns[1].Pages = []hostilepq.Page{hostilepq.GzipBomb(1024, 3<<30)}
		}), "inflates past its declared 1024 bytes"},
		{"nullcount", mutate(func(f *hostilepq.File) {
			f.Columns[1].Pages = []hostilepq.Page{hostilepq.Int64Page(true, hostilepq.Ptrs(1000, func(i int) bool { return i%100 == 0 }))}
		}), "the footer says 0 nulls, the pages hold 10"},
		{"rows", mutate(func(f *hostilepq.File) { f.GroupRows = 1_000_000_000_000 }), "1000000000000 rows"},
		{"bounds", mutate(func(f *hostilepq.File) { f.Columns[1].Stats.MaxValue = hostilepq.Int64(10) }), "max_value is below the largest value"},
		{"undecodable", mutate(func(f *hostilepq.File) {
			p := &f.Columns[1].Pages[0]
			p.Body = p.Body[:len(p.Body)/2]
			p.Uncompressed = int32(len(p.Body))
		}), "column number page 0"},
	}
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{})
	before := latestSnapshot(t, root)
	glob := fmt.Sprintf("SELECT count(*), sum(number) FROM read_parquet('%s')", filepath.Join(tdir, "@latest", "*.parquet"))
	want := duckdbQuery(t, glob)
	// Reset the peak RSS (clear_refs 5): what follows must stay within
	// the validation bound (256 MiB) plus the mount's working set.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	base := vmHWM(t)
	for _, c := range cases {
		err := os.WriteFile(filepath.Join(tdir, "inbox", c.name+".parquet"), c.data, 0o644)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", c.name, err)
		}
		ev := inboxStatus(t, tdir)
		if last := ev[len(ev)-1]; last.Errno != "EINVAL" || !strings.Contains(last.Error, c.reason) || !strings.Contains(last.Error, c.name+".parquet") {
			t.Errorf("%s: last status %+v, want EINVAL naming the file and %q", c.name, last, c.reason)
		} else if len(last.Error) > 1100 {
			t.Errorf("%s: status error of %d bytes, want at most about 1 KiB", c.name, len(last.Error))
		}
	}
	if grew := vmHWM(t) - base; grew > 256<<20 {
		t.Errorf("peak RSS grew by %d MiB refusing the files, over the 256 MiB validation bound", grew>>20)
	}
	after := latestSnapshot(t, root)
	if after.Version() != before.Version() {
		t.Errorf("table moved from version %d to %d", before.Version(), after.Version())
	}
	if got := duckdbQuery(t, glob); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DuckDB over @latest after the refusals: %v, want %v", got, want)
	}
	honest := basicAppendFile(10)
	if err := os.WriteFile(filepath.Join(tdir, "inbox", "honest.parquet"), honest.Bytes(), 0o644); err != nil {
		t.Fatalf("an honest file after the hostile ones: %v", err)
	}
}
