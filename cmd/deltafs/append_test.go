package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

type appendRow struct {
	Number *int64   `parquet:"number,optional"`
	AFloat *float64 `parquet:"a_float,optional"`
}

func writeRows(t *testing.T, path string, rows []appendRow) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[appendRow](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func one(n int64) []appendRow { return []appendRow{{Number: &n}} }

func TestAppendCommand(t *testing.T) {
	table := testenv.CopyFixture(t, "dat/basic_partitioned")
	dir := t.TempDir()
	a := filepath.Join(dir, "letter=q", "a.parquet") // partition from the Hive dir
	b := filepath.Join(dir, "letter=r", "b.parquet")
	writeRows(t, a, one(1))
	writeRows(t, b, []appendRow{{}, {}})
	out, errOut, code := deltafs(t, "append", table, a, b)
	if code != 0 {
		t.Fatalf("append: exit %d: %s", code, errOut)
	}
	v, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || v != 2 {
		t.Fatalf("append printed %q, want the new version 2", out)
	}
	lsOut, errOut, code := deltafs(t, "ls", table+"@v2", "--json")
	if code != 0 {
		t.Fatalf("ls: %s", errOut)
	}
	found := map[string]float64{}
	for _, l := range jsonLines(t, lsOut) {
		if p, _ := l["partitionValues"].(map[string]any)["letter"].(string); p == "q" || p == "r" {
			found[p] += l["rows"].(float64)
		}
	}
	if found["q"] != 1 || found["r"] != 2 {
		t.Errorf("new files in ls: %v, want q:1 r:2", found)
	}

	// --partition overrides the directories; all files in one version.
	c := filepath.Join(dir, "c.parquet")
	writeRows(t, c, one(3))
	out, errOut, code = deltafs(t, "append", table, "--partition", "letter=s", c)
	if code != 0 || strings.TrimSpace(out) != "3" {
		t.Fatalf("append --partition: exit %d, out %q: %s", code, out, errOut)
	}
}

func TestAppendCommandRefusesBadFile(t *testing.T) {
	table := testenv.CopyFixture(t, "dat/basic_append")
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	os.WriteFile(bad, []byte("not parquet"), 0o644)
	good := filepath.Join(t.TempDir(), "good.parquet")
	writeRows(t, good, one(1))
	out, errOut, code := deltafs(t, "append", table, good, bad)
	if code != 1 || out != "" || !strings.Contains(errOut, "bad.parquet") || !strings.Contains(errOut, "invalid file") {
		t.Fatalf("exit %d, out %q, err %q: want exit 1 naming bad.parquet", code, out, errOut)
	}
	hist, _, _ := deltafs(t, "history", table, "--json")
	if n := len(jsonLines(t, hist)); n != 2 {
		t.Errorf("history has %d versions after a refused append, want 2", n)
	}
}

// Partition mistakes are reported all at once, in command-line terms,
// and a column given twice is refused; nothing is committed.
func TestAppendPartitionMistakes(t *testing.T) {
	table := testenv.CopyFixture(t, "dat/basic_partitioned")
	file := filepath.Join(t.TempDir(), "a.parquet")
	writeRows(t, file, one(1))
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{file}, []string{"--partition letter=VALUE", "col=VALUE/"}},
		{[]string{"--partition", "country=fr", file}, []string{"--partition letter=VALUE", "country"}},
		{[]string{"--partition", "letter=a", "--partition", "Letter=b", file}, []string{"given twice"}},
	} {
		_, errOut, code := deltafs(t, append([]string{"append", table}, c.args...)...)
		if code == 0 {
			t.Errorf("%v: exit 0, want a refusal", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q does not say %q", c.args, errOut, w)
			}
		}
	}
	out, _, _ := deltafs(t, "history", table, "--json")
	if n := len(jsonLines(t, out)); n != 2 {
		t.Errorf("%d versions after refusals, want 2", n)
	}
}
