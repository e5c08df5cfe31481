package integration

// Batches: a directory made under a temporary name in the inbox and
// renamed to a final one commits every Parquet file under it (in its
// partition layout) as ONE version, or refuses the whole batch naming
// each bad file, with the table unchanged and the batch left as it was.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// writeFiles writes each path (under dir) with its bytes, making parents.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("mkdir for %s: %v", p, err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
}

// rowCount counts the rows a legacy reader sees in a snapshot directory.
func rowCount(t *testing.T, dir string) int {
	t.Helper()
	bag, err := walkSnapshot(dir, basicSchema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return bag.n
}

// newFilesByPartition returns how many live files of after are not in
// before, by letter partition value.
func newFilesByPartition(t *testing.T, before, after *delta.Snapshot) map[string]int {
	t.Helper()
	old := liveFiles(t, before)
	out := map[string]int{}
	for p, f := range liveFiles(t, after) {
		if _, ok := old[p]; !ok {
			out[*f.PartitionValues["letter"]]++
		}
	}
	return out
}

func TestInboxBatch50Files(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	files := map[string][]byte{
		// What Spark leaves beside its output: not committed, discarded.
		"_SUCCESS":                         nil,
		"letter=a/.part-00000.parquet.crc": []byte("crc"),
	}
	for i := range 50 {
		letter := []string{"a", "b"}[i%2]
		files[fmt.Sprintf("letter=%s/part-%05d.parquet", letter, i)] = parquetBytes(t, []basicDataRow{
			{ptr(int64(1000 + i)), ptr(float64(i))}, {ptr(int64(2000 + i)), nil}})
	}
	batch := filepath.Join(inbox, ".batch1")
	writeFiles(t, batch, files)
	if err := os.MkdirAll(filepath.Join(batch, "_temporary", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, root, before)

	if err := os.Rename(batch, filepath.Join(inbox, "batch1")); err != nil {
		t.Fatalf("rename of the batch: %v", err)
	}
	v := before.Version() + 1
	ev := inboxStatus(t, tdir)
	if last := ev[len(ev)-1]; last.Version == nil || *last.Version != v || last.File != "batch1" {
		t.Fatalf("last status %+v, want the commit of batch1 as version %d", last, v)
	}
	after := latestSnapshot(t, root)
	if after.Version() != v {
		t.Fatalf("latest version %d, want exactly one new version %d", after.Version(), v)
	}
	if n := commitAdds(t, root, v); n != 50 {
		t.Errorf("commit %d has %d adds, want 50", v, n)
	}
	if got := newFilesByPartition(t, before, after); got["a"] != 25 || got["b"] != 25 || len(got) != 2 {
		t.Errorf("new files by partition %v, want 25 in a and 25 in b", got)
	}
	if got, want := rowCount(t, filepath.Join(tdir, fmt.Sprintf("@v%d", v))), rowCount(t, filepath.Join(tdir, fmt.Sprintf("@v%d", v-1)))+100; got != want {
		t.Errorf("@v%d holds %d rows, want %d", v, got, want)
	}
	if names := readDirNames(t, inbox); !slices.Equal(names, []string{"_status.jsonl"}) {
		t.Errorf("inbox lists %v after the batch, want only _status.jsonl", names)
	}
}

// TestInboxBatchRefused: one rename refuses the whole batch and names
// every bad file; the batch stays under its temporary name; once the bad
// files are removed the same rename commits the rest.
func TestInboxBatchRefused(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before, files := latestSnapshot(t, root), tableFiles(t, root)
	good := parquetBytes(t, []basicDataRow{{ptr[int64](1), ptr(1.0)}})
	batch := filepath.Join(inbox, ".batch2")
	writeFiles(t, batch, map[string][]byte{
		"letter=a/good.parquet": good,
		"letter=a/bad1.parquet": parquetBytes(t, []wrongRow{{1}}),
		"letter=b/bad2.parquet": []byte("not parquet at all"),
		"loose.parquet":         good,
		"number=1/x.parquet":    good,
	})
	err := os.Rename(batch, filepath.Join(inbox, "batch2"))
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("rename of a batch with bad files: %v, want EINVAL", err)
	}
	ev := inboxStatus(t, tdir)
	last := ev[len(ev)-1]
	for _, bad := range []string{"batch2/letter=a/bad1.parquet", "batch2/letter=b/bad2.parquet", "batch2/loose.parquet", "batch2/number=1"} {
		if !strings.Contains(last.Error, bad) {
			t.Errorf("refusal %q does not name %s", last.Error, bad)
		}
	}
	if strings.Contains(last.Error, "good.parquet") || last.Errno != "EINVAL" || last.File != "batch2" {
		t.Errorf("refusal %+v: want EINVAL for batch2, not naming good.parquet", last)
	}
	checkUnchanged(t, root, before)
	if got := tableFiles(t, root); !sameSizes(got, files) {
		t.Errorf("the refused batch wrote into the table:\nbefore %v\nafter  %v", files, got)
	}
	for _, p := range []string{"letter=a/good.parquet", "letter=a/bad1.parquet", "letter=b/bad2.parquet", "loose.parquet"} {
		if _, err := os.Stat(filepath.Join(batch, p)); err != nil {
			t.Errorf("after the refusal: %v", err)
		}
	}
	for _, p := range []string{"letter=a/bad1.parquet", "letter=b/bad2.parquet", "loose.parquet", "number=1/x.parquet", "number=1"} {
		if err := os.Remove(filepath.Join(batch, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(batch, filepath.Join(inbox, "batch2")); err != nil {
		t.Fatalf("rename after removing the bad files: %v", err)
	}
	if after := latestSnapshot(t, root); after.Version() != before.Version()+1 || commitAdds(t, root, after.Version()) != 1 {
		t.Errorf("after the fixed batch: version %d, want %d with one add", after.Version(), before.Version()+1)
	}
}

// TestInboxHadoopStyleRenames: a job committing by renaming its task
// outputs out of _temporary/ one by one (Hadoop's FileOutputCommitter)
// makes one version per rename: a file renamed into a partition
// directory is one version, a task's partition directory renamed to the
// final col=value name is one version with its files.
func TestInboxHadoopStyleRenames(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	good := func(n int64) []byte { return parquetBytes(t, []basicDataRow{{ptr(n), nil}}) }
	writeFiles(t, filepath.Join(inbox, "_temporary", "0"), map[string][]byte{
		"task_1/letter=a/part-00000.parquet": good(1),
		"task_2/letter=c/part-00001.parquet": good(2),
		"task_2/letter=c/part-00002.parquet": good(3),
	})
	if err := os.Mkdir(filepath.Join(inbox, "letter=a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(inbox, "_temporary/0/task_1/letter=a/part-00000.parquet"), filepath.Join(inbox, "letter=a/part-00000.parquet")); err != nil {
		t.Fatalf("rename of a task's file into place: %v", err)
	}
	if err := os.Rename(filepath.Join(inbox, "_temporary/0/task_2/letter=c"), filepath.Join(inbox, "letter=c")); err != nil {
		t.Fatalf("rename of a task's partition directory into place: %v", err)
	}
	v := before.Version()
	after := latestSnapshot(t, root)
	if after.Version() != v+2 || commitAdds(t, root, v+1) != 1 || commitAdds(t, root, v+2) != 2 {
		t.Fatalf("version %d, want %d: one add, then two", after.Version(), v+2)
	}
	if got := newFilesByPartition(t, before, after); got["a"] != 1 || got["c"] != 2 {
		t.Errorf("new files by partition %v, want 1 in a, 2 in c", got)
	}
	if err := os.RemoveAll(filepath.Join(inbox, "_temporary")); err != nil {
		t.Errorf("rm -r of the emptied _temporary: %v", err)
	}
}

// duckdbRun runs one SQL statement in DuckDB (node API).
func duckdbRun(t *testing.T, sql string) {
	t.Helper()
	dir := testenv.NodeDir(t, "@duckdb/node-api")
	if dir == "" {
		return
	}
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const c = await (await DuckDBInstance.create()).connect();
await c.run(process.argv[1]);`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script, sql)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("duckdb %s: %v\n%s", sql, err, out)
	}
}

// TestInboxDuckDBBatch: DuckDB writes a partitioned COPY into a temporary
// directory of the inbox; renaming the directory commits it as one
// version.
func TestInboxDuckDBBatch(t *testing.T) {
	if testenv.NodeDir(t, "@duckdb/node-api") == "" {
		return
	}
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	job := filepath.Join(inbox, "_job")
	duckdbRun(t, fmt.Sprintf(`COPY (SELECT i::BIGINT AS number, i / 4 AS a_float,
		CASE WHEN i %% 2 = 0 THEN 'x' ELSE 'y' END AS letter FROM range(10) t(i))
		TO '%s' (FORMAT parquet, PARTITION_BY (letter))`, job))
	checkUnchanged(t, root, before)
	if err := os.Rename(job, filepath.Join(inbox, "job")); err != nil {
		t.Fatalf("rename of DuckDB's output: %v", err)
	}
	after := latestSnapshot(t, root)
	if after.Version() != before.Version()+1 {
		t.Fatalf("version %d, want %d", after.Version(), before.Version()+1)
	}
	if got := newFilesByPartition(t, before, after); got["x"] == 0 || got["y"] == 0 || len(got) != 2 {
		t.Errorf("new files by partition %v, want files in x and y", got)
	}
	v := after.Version()
	if got, want := rowCount(t, filepath.Join(tdir, fmt.Sprintf("@v%d", v))), rowCount(t, filepath.Join(tdir, fmt.Sprintf("@v%d", v-1)))+10; got != want {
		t.Errorf("@v%d holds %d rows, want %d", v, got, want)
	}
}

// TestInboxRsyncBatch: rsync -a of a directory tree into a scratch
// directory (rsync makes its temporary names there, renames them, sets
// modes and times of files and directories), then one rename: one
// version with every file.
func TestInboxRsyncBatch(t *testing.T) {
	rsync := testenv.Tool(t, "rsync")
	if rsync == "" {
		return
	}
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	src := t.TempDir()
	files := map[string][]byte{}
	for i := range 6 {
		files[fmt.Sprintf("letter=%s/part-%d.parquet", []string{"a", "b"}[i%2], i)] = parquetBytes(t, []basicDataRow{{ptr(int64(i)), nil}})
	}
	writeFiles(t, src, files)
	if out, err := run(t, rsync, "-a", src+"/", filepath.Join(inbox, ".b1")+"/"); err != nil {
		t.Fatalf("rsync -a into a scratch directory: %v\n%s", err, out)
	}
	checkUnchanged(t, root, before)
	if err := os.Rename(filepath.Join(inbox, ".b1"), filepath.Join(inbox, "b1")); err != nil {
		t.Fatalf("rename of the batch: %v", err)
	}
	after := latestSnapshot(t, root)
	if after.Version() != before.Version()+1 || commitAdds(t, root, after.Version()) != 6 {
		t.Fatalf("version %d, want %d with 6 adds", after.Version(), before.Version()+1)
	}
	if got := newFilesByPartition(t, before, after); got["a"] != 3 || got["b"] != 3 {
		t.Errorf("new files by partition %v, want 3 in a and 3 in b", got)
	}
}

// TestInboxDuckDBFile: DuckDB's COPY of one file, straight to a final
// name (committed when DuckDB closes it) and to a temporary name renamed
// into place.
func TestInboxDuckDBFile(t *testing.T) {
	if testenv.NodeDir(t, "@duckdb/node-api") == "" {
		return
	}
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	const rows = `SELECT 'd' AS letter, i::BIGINT AS number, i / 2 AS a_float FROM range(5) t(i)`
	duckdbRun(t, fmt.Sprintf(`COPY (%s) TO '%s' (FORMAT parquet)`, rows, filepath.Join(inbox, "direct.parquet")))
	if v := latestSnapshot(t, root).Version(); v != before.Version()+1 {
		t.Fatalf("after COPY to a final name: version %d, want %d", v, before.Version()+1)
	}
	tmp := filepath.Join(inbox, ".staged.parquet.tmp")
	duckdbRun(t, fmt.Sprintf(`COPY (%s) TO '%s' (FORMAT parquet)`, rows, tmp))
	if v := latestSnapshot(t, root).Version(); v != before.Version()+1 {
		t.Fatalf("after COPY to a temporary name: version %d, want %d", v, before.Version()+1)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, "staged.parquet")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	after := latestSnapshot(t, root)
	if after.Version() != before.Version()+2 || commitAdds(t, root, after.Version()) != 1 {
		t.Fatalf("version %d, want %d with one add", after.Version(), before.Version()+2)
	}
	if got, want := rowCount(t, filepath.Join(tdir, "@latest")), rowCount(t, filepath.Join(tdir, fmt.Sprintf("@v%d", before.Version())))+10; got != want {
		t.Errorf("@latest holds %d rows, want %d", got, want)
	}
}

// TestInboxMvDirectoryFromElsewhere: mv of a directory from another file
// system is a copy, file by file. Under a final label it is refused at
// the mkdir (the source stays); under a temporary name it lands staged,
// and the rename into place is one version.
func TestInboxMvDirectoryFromElsewhere(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	before := latestSnapshot(t, root)
	src := filepath.Join(t.TempDir(), "out")
	writeFiles(t, src, map[string][]byte{
		"letter=a/p1.parquet": parquetBytes(t, []basicDataRow{{ptr[int64](1), nil}}),
		"letter=b/p2.parquet": parquetBytes(t, []basicDataRow{{ptr[int64](2), nil}}),
	})
	if out, err := run(t, "mv", src, filepath.Join(inbox, "out")); err == nil {
		t.Errorf("mv of a directory under a final label succeeded:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(src, "letter=a", "p1.parquet")); err != nil {
		t.Errorf("the source after the refused mv: %v", err)
	}
	checkUnchanged(t, root, before)
	if out, err := run(t, "mv", src, filepath.Join(inbox, ".out")); err != nil {
		t.Fatalf("mv under a temporary name: %v\n%s", err, out)
	}
	checkUnchanged(t, root, before)
	if out, err := run(t, "mv", filepath.Join(inbox, ".out"), filepath.Join(inbox, "out")); err != nil {
		t.Fatalf("mv into place: %v\n%s", err, out)
	}
	after := latestSnapshot(t, root)
	if after.Version() != before.Version()+1 || commitAdds(t, root, after.Version()) != 2 {
		t.Errorf("version %d, want %d with 2 adds", after.Version(), before.Version()+1)
	}
}
