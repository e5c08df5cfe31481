package integration

// The model's temporary names, renames and batches (see model_test.go):
// a file staged under a temporary name commits nothing until renamed to a
// final name, and then exactly one version with its rows; a scratch
// directory renamed to a final name commits all its Parquet files as one
// version; a refused rename or batch leaves the table, its files and the
// staged files as they were.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/parquet-go/parquet-go"
	"pgregory.net/rapid"
)

// Rows of files the table must take: an optional id without nulls, and an
// int32 id (re-encoded to long while staged).
type (
	modelOptRow struct {
		ID *int64 `parquet:"id"`
	}
	modelNarrowRow struct {
		ID int32 `parquet:"id"`
	}
)

// Rows of files the table must refuse.
type (
	modelNopeRow struct {
		Nope int64 `parquet:"nope"`
	}
	modelStringRow struct {
		ID string `parquet:"id"`
	}
	modelExtraRow struct {
		ID int64 `parquet:"id"`
		X  int64 `parquet:"x"`
	}
)

func encodeModelRows[T any](rt *rapid.T, rows []T) []byte {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		rt.Fatal(err)
	}
	if err := w.Close(); err != nil {
		rt.Fatal(err)
	}
	return buf.Bytes()
}

// encodeIDs encodes ids as a Parquet file the table accepts, in one of the
// encodings writers use.
func encodeIDs(rt *rapid.T, ids []int64) []byte {
	switch rapid.SampledFrom([]string{"long", "long", "optional long", "int32"}).Draw(rt, "encoding") {
	case "optional long":
		rows := make([]modelOptRow, len(ids))
		for i := range ids {
			rows[i].ID = &ids[i]
		}
		return encodeModelRows(rt, rows)
	case "int32":
		rows := make([]modelNarrowRow, len(ids))
		for i, id := range ids {
			rows[i].ID = int32(id)
		}
		return encodeModelRows(rt, rows)
	}
	rows := make([]modelRow, len(ids))
	for i, id := range ids {
		rows[i].ID = id
	}
	return encodeModelRows(rt, rows)
}

// badContent is a file the table refuses (EINVAL), holding the next n ids
// where it holds rows at all: were it committed, reads would show them.
func (m *modelTable) badContent(rt *rapid.T, n int) []byte {
	ids := m.nextIDs(n)
	switch rapid.SampledFrom([]string{"not parquet", "truncated", "wrong column", "string id", "extra column", "null id"}).Draw(rt, "bad") {
	case "not parquet":
		return append([]byte("id\n"), rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(rt, "garbage")...)
	case "truncated":
		data := encodeIDs(rt, ids)
		return data[:rapid.IntRange(1, len(data)-1).Draw(rt, "cut")]
	case "wrong column":
		rows := make([]modelNopeRow, n)
		for i, id := range ids {
			rows[i].Nope = id
		}
		return encodeModelRows(rt, rows)
	case "string id":
		rows := make([]modelStringRow, n)
		for i, id := range ids {
			rows[i].ID = fmt.Sprint(id)
		}
		return encodeModelRows(rt, rows)
	case "extra column":
		rows := make([]modelExtraRow, n)
		for i, id := range ids {
			rows[i] = modelExtraRow{ID: id, X: id}
		}
		return encodeModelRows(rt, rows)
	}
	// A null in the table's non-nullable id column.
	rows := make([]modelOptRow, n)
	for i := range ids {
		rows[i].ID = &ids[i]
	}
	rows[rapid.IntRange(0, n-1).Draw(rt, "null at")].ID = nil
	return encodeModelRows(rt, rows)
}

// nextIDs draws the next n ids.
func (m *modelTable) nextIDs(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		m.nextID++
		ids[i] = m.nextID
	}
	return ids
}

// nextName is a fresh final file name.
func (m *modelTable) nextName() string {
	m.files++
	return fmt.Sprintf("f%d.parquet", m.files)
}

// tempName is a temporary name for final, as publishers make them.
func tempName(rt *rapid.T, final string) string {
	switch rapid.SampledFrom([]string{"rsync", "tmp", "underscore", "part"}).Draw(rt, "temporary name") {
	case "rsync":
		return "." + final + "." + rapid.StringMatching(`[A-Za-z0-9]{6}`).Draw(rt, "rsync suffix")
	case "tmp":
		return final + ".tmp"
	case "underscore":
		return "_" + final
	}
	return strings.TrimSuffix(final, ".parquet") + ".part"
}

func (m *modelTable) inbox(mount int) string { return filepath.Join(m.mounts[mount], "t", "inbox") }

// renameAppend writes rows to a temporary name in a mount's inbox (or to
// any name in a scratch directory), checks that nothing is committed,
// and renames it to a final name: rename() returning nil means exactly
// one new version holding the rows. Some files are renamed while still
// open for writing: that only moves them, and their close() commits.
func (m *modelTable) renameAppend(rt *rapid.T, mount, n int) {
	inbox := m.inbox(mount)
	ids := m.nextIDs(n)
	data := encodeIDs(rt, ids)
	final := m.nextName()
	dir, tmp := inbox, tempName(rt, final)
	if rapid.Bool().Draw(rt, "in a scratch directory") {
		// Under a scratch directory any name is staged, a final one too.
		dir = filepath.Join(inbox, fmt.Sprintf(".stage-%d", m.files))
		if err := os.Mkdir(dir, 0o755); err != nil {
			rt.Fatalf("mkdir of a scratch directory: %v", err)
		}
		tmp = rapid.SampledFrom([]string{tmp, final}).Draw(rt, "staged name")
	}
	tmpPath, finalPath := filepath.Join(dir, tmp), filepath.Join(inbox, final)
	open := rapid.Bool().Draw(rt, "rename while open")
	f, err := os.OpenFile(tmpPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		rt.Fatalf("create %s: %v", tmpPath, err)
	}
	defer f.Close() // on a failure: lets the mount unmount
	for rest := data; len(rest) > 0; {
		k := rapid.IntRange(1, len(rest)).Draw(rt, "write size")
		if _, err := f.Write(rest[:k]); err != nil {
			rt.Fatalf("write %s: %v", tmpPath, err)
		}
		rest = rest[k:]
	}
	if open {
		if err := os.Rename(tmpPath, finalPath); err != nil {
			rt.Fatalf("rename of %s while open for writing: %v", tmpPath, err)
		}
		m.checkVersions(rt) // it only moved
		if err := f.Close(); err != nil {
			rt.Fatalf("close of %s (renamed from %s while open): %v", finalPath, tmpPath, err)
		}
	} else {
		if rapid.Bool().Draw(rt, "fsync") {
			if err := f.Sync(); err != nil {
				rt.Fatalf("fsync %s: %v", tmpPath, err)
			}
		}
		if err := f.Close(); err != nil {
			rt.Fatalf("close %s: %v", tmpPath, err)
		}
		m.checkVersions(rt) // staged, not committed
		m.checkStaged(rt, tmpPath, data)
		if rapid.Bool().Draw(rt, "hop through another temporary name") {
			hop := filepath.Join(dir, "_hop-"+tmp)
			if err := os.Rename(tmpPath, hop); err != nil {
				rt.Fatalf("rename %s to the temporary %s: %v", tmpPath, hop, err)
			}
			m.checkVersions(rt)
			tmpPath = hop
		}
		if err := os.Rename(tmpPath, finalPath); err != nil {
			rt.Fatalf("rename %s to %s: %v", tmpPath, finalPath, err)
		}
	}
	m.commit(ids)
	m.checkCommit(rt, mount, 1, "commit", final)
	if _, err := os.Lstat(tmpPath); !errors.Is(err, fs.ErrNotExist) {
		rt.Fatalf("after the commit, %s: %v, want ENOENT", tmpPath, err)
	}
	if dir != inbox {
		if err := os.Remove(dir); err != nil {
			rt.Fatalf("rmdir of the emptied scratch directory: %v", err)
		}
	}
}

// checkStaged checks that a staged file reads back as written.
func (m *modelTable) checkStaged(rt *rapid.T, path string, data []byte) {
	got, err := os.ReadFile(path)
	if err != nil {
		rt.Fatalf("read back the staged %s: %v", path, err)
	}
	if !bytes.Equal(got, data) {
		rt.Fatalf("the staged %s reads back %d bytes, %d written (or other bytes)", path, len(got), len(data))
	}
}

// batchFile is a file to write into a batch.
type modelBatchFile struct {
	rel  string
	data []byte
	ids  []int64 // committed with the batch
}

// writeBatch makes the scratch directory and writes files into it.
func writeBatch(rt *rapid.T, dir string, files []modelBatchFile) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		rt.Fatalf("mkdir of a scratch directory: %v", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, f.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			rt.Fatalf("mkdir in the batch: %v", err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			rt.Fatalf("write %s: %v", p, err)
		}
	}
}

// scratchName is a temporary directory name, as jobs make them.
func (m *modelTable) scratchName(rt *rapid.T) (scratch, final string) {
	m.files++
	k := m.files
	return fmt.Sprintf(rapid.SampledFrom([]string{".batch-%d", "_temporary-%d", ".spark-staging-%d"}).Draw(rt, "scratch name"), k),
		fmt.Sprintf("batch-%d", k)
}

// goodBatchFiles draws 1-5 Parquet files to commit and, maybe, what jobs
// leave beside them (_SUCCESS, .crc files, an empty _temporary/).
func (m *modelTable) goodBatchFiles(rt *rapid.T) []modelBatchFile {
	var files []modelBatchFile
	for range rapid.IntRange(1, 5).Draw(rt, "files") {
		ids := m.nextIDs(rapid.IntRange(1, 3).Draw(rt, "rows"))
		files = append(files, modelBatchFile{rel: m.nextName(), data: encodeIDs(rt, ids), ids: ids})
	}
	if rapid.Bool().Draw(rt, "_SUCCESS") {
		files = append(files, modelBatchFile{rel: "_SUCCESS"})
	}
	if rapid.Bool().Draw(rt, "crc") {
		files = append(files, modelBatchFile{rel: "." + files[0].rel + ".crc", data: []byte("crc")})
	}
	if rapid.Bool().Draw(rt, "temporary subdirectory") {
		files = append(files, modelBatchFile{rel: "_temporary/0/.keep"})
	}
	return files
}

// batchAppend writes a scratch directory and renames it to a final name:
// exactly one new version with the rows of all its Parquet files.
func (m *modelTable) batchAppend(rt *rapid.T, mount int) {
	inbox := m.inbox(mount)
	scratch, final := m.scratchName(rt)
	files := m.goodBatchFiles(rt)
	writeBatch(rt, filepath.Join(inbox, scratch), files)
	m.checkVersions(rt)
	if err := os.Rename(filepath.Join(inbox, scratch), filepath.Join(inbox, final)); err != nil {
		rt.Fatalf("rename of the batch %s to %s: %v", scratch, final, err)
	}
	m.commitBatch(rt, mount, final, files)
}

// commitBatch records a committed batch and checks its commit.
func (m *modelTable) commitBatch(rt *rapid.T, mount int, final string, files []modelBatchFile) {
	var ids []int64
	n := 0
	for _, f := range files {
		if f.ids != nil {
			ids, n = append(ids, f.ids...), n+1
		}
	}
	m.commit(ids)
	m.checkCommit(rt, mount, n, "commit", final)
}

// refusedRename renames a staged file the table refuses to a final name:
// EINVAL, nothing changes, and the file stays under its temporary name;
// then it is removed, or rewritten with good rows and renamed again.
func (m *modelTable) refusedRename(rt *rapid.T, mount int) {
	inbox := m.inbox(mount)
	final := m.nextName()
	tmpPath, finalPath := filepath.Join(inbox, tempName(rt, final)), filepath.Join(inbox, final)
	data := m.badContent(rt, rapid.IntRange(1, 3).Draw(rt, "rows"))
	if err := os.WriteFile(tmpPath, data, 0o644); err != nil {
		rt.Fatalf("write %s: %v", tmpPath, err)
	}
	before := tableListing(rt, m.dir)
	if err := os.Rename(tmpPath, finalPath); !errors.Is(err, syscall.EINVAL) {
		rt.Fatalf("rename of a bad file %s to %s: %v, want EINVAL", tmpPath, finalPath, err)
	}
	m.checkRefused(rt, mount, before, final)
	m.checkStaged(rt, tmpPath, data)
	if rapid.Bool().Draw(rt, "fix it") {
		ids := m.nextIDs(rapid.IntRange(1, 3).Draw(rt, "rows"))
		if err := os.WriteFile(tmpPath, encodeIDs(rt, ids), 0o644); err != nil {
			rt.Fatalf("rewrite %s: %v", tmpPath, err)
		}
		if err := os.Rename(tmpPath, finalPath); err != nil {
			rt.Fatalf("rename of the rewritten %s: %v", tmpPath, err)
		}
		m.commit(ids)
		m.checkCommit(rt, mount, 1, "commit", final)
		return
	}
	if err := os.Remove(tmpPath); err != nil {
		rt.Fatalf("remove the refused %s: %v", tmpPath, err)
	}
}

// refusedBatch renames a batch with one bad entry (bad content, a Parquet
// file outside the table's layout or under a temporary directory): the
// whole batch is refused and stays as it was; then it is removed, or the
// bad file is removed and the batch renamed again.
func (m *modelTable) refusedBatch(rt *rapid.T, mount int) {
	inbox := m.inbox(mount)
	scratch, final := m.scratchName(rt)
	files := m.goodBatchFiles(rt)
	bad := modelBatchFile{rel: m.nextName()}
	switch rapid.SampledFrom([]string{"content", "subdirectory", "temporary directory"}).Draw(rt, "bad entry") {
	case "content":
		bad.data = m.badContent(rt, rapid.IntRange(1, 3).Draw(rt, "rows"))
	case "subdirectory":
		// Not a partition directory: the table is not partitioned.
		bad.rel, bad.data = "sub/"+bad.rel, encodeIDs(rt, m.nextIDs(1))
	default:
		bad.rel, bad.data = "_temporary/1/"+bad.rel, encodeIDs(rt, m.nextIDs(1))
	}
	at := rapid.IntRange(0, len(files)).Draw(rt, "bad at")
	files = slices.Insert(files, at, bad)
	dir := filepath.Join(inbox, scratch)
	writeBatch(rt, dir, files)
	before := tableListing(rt, m.dir)
	if err := os.Rename(dir, filepath.Join(inbox, final)); !errors.Is(err, syscall.EINVAL) {
		rt.Fatalf("rename of a batch with the bad %s: %v, want EINVAL", bad.rel, err)
	}
	m.checkRefused(rt, mount, before, final)
	for _, f := range files {
		m.checkStaged(rt, filepath.Join(dir, f.rel), f.data)
	}
	if rapid.Bool().Draw(rt, "fix it") {
		if err := os.Remove(filepath.Join(dir, bad.rel)); err != nil {
			rt.Fatalf("remove the bad file of the batch: %v", err)
		}
		if strings.HasPrefix(bad.rel, "sub/") {
			// An empty directory that is not a partition one refuses too.
			if err := os.Remove(filepath.Join(dir, "sub")); err != nil {
				rt.Fatalf("rmdir of the batch's sub/: %v", err)
			}
		}
		if err := os.Rename(dir, filepath.Join(inbox, final)); err != nil {
			rt.Fatalf("rename of the batch without its bad file: %v", err)
		}
		m.commitBatch(rt, mount, final, slices.Delete(files, at, at+1))
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		rt.Fatalf("rm -r of the refused batch: %v", err)
	}
}

// checkRefused checks that a refused rename changed nothing in the table
// (the log and every file) and says why in the mount's status.
func (m *modelTable) checkRefused(rt *rapid.T, mount int, before map[string]int64, final string) {
	m.checkVersions(rt)
	if after := tableListing(rt, m.dir); !maps.Equal(before, after) {
		rt.Fatalf("a refused rename changed the table's files:\nbefore %v\nafter  %v", before, after)
	}
	e := lastStatus(rt, m.inbox(mount))
	if e.Op != "rename" || e.File != final || e.Errno != "EINVAL" || e.Error == "" {
		rt.Fatalf("mount %d: last status %+v, want the refused rename to %s (EINVAL, with its reason)", mount, e, final)
	}
}

// checkCommit checks the newest version, just recorded in the model: its
// commit has exactly files adds and no removes, and the mount's status
// says it was the commit of final.
func (m *modelTable) checkCommit(rt *rapid.T, mount, files int, op, final string) {
	v := len(m.rows) - 1
	m.checkVersions(rt)
	adds, removes := commitActions(rt, m.dir, v)
	if adds != files || removes != 0 {
		rt.Fatalf("commit %d of %s has %d adds and %d removes, want %d adds", v, final, adds, removes, files)
	}
	e := lastStatus(rt, m.inbox(mount))
	if e.Op != op || e.File != final || e.Version == nil || *e.Version != int64(v) {
		rt.Fatalf("mount %d: last status %+v, want the %s of %s as version %d", mount, e, op, final, v)
	}
}

// commitActions counts the adds and removes of commit v.
func commitActions(rt *rapid.T, dir string, v int) (adds, removes int) {
	data, err := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		rt.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Add    *json.RawMessage `json:"add"`
			Remove *json.RawMessage `json:"remove"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			rt.Fatalf("commit %d: %v", v, err)
		}
		if line.Add != nil {
			adds++
		}
		if line.Remove != nil {
			removes++
		}
	}
	return adds, removes
}

type modelStatus struct {
	Op, File, From, Error, Errno string
	Files                        int
	Version                      *int64
}

// lastStatus is the last line of an inbox's _status.jsonl.
func lastStatus(rt *rapid.T, inbox string) modelStatus {
	data, err := os.ReadFile(filepath.Join(inbox, "_status.jsonl"))
	if err != nil {
		rt.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var e modelStatus
	if err := json.Unmarshal(lines[len(lines)-1], &e); err != nil {
		rt.Fatalf("%s/_status.jsonl: %v\n%s", inbox, err, data)
	}
	return e
}

// tableListing is every file of the table directory with its size.
func tableListing(rt *rapid.T, dir string) map[string]int64 {
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if isBackgroundCheckpoint(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, dir)] = fi.Size()
		return nil
	})
	if err != nil {
		rt.Fatal(err)
	}
	return out
}

// isBackgroundCheckpoint reports whether name is a checkpoint, the
// _last_checkpoint hint or one of their temp files: written in the
// background after an earlier commit was acknowledged, at any time (they
// summarize commits; the table's content does not change).
func isBackgroundCheckpoint(name string) bool {
	name = strings.TrimPrefix(name, ".")
	return strings.Contains(name, ".checkpoint.") || strings.HasPrefix(name, "_last_checkpoint")
}

// modelPending is a staged temporary file or scratch directory left in a
// mount's inbox across steps, renamed to its final name by a later step
// (other appends, reads and remounts run in between).
type modelPending struct {
	tmp, final string           // names in the inbox
	files      []modelBatchFile // a scratch directory's files; else one file (rel "")
	bad        bool             // the rename must be refused
}

// stage leaves a temporary file or a scratch directory in a mount's inbox.
func (m *modelTable) stage(rt *rapid.T, mount int) {
	if len(m.pending[mount]) >= 4 {
		rt.Skip("enough staged in this mount")
	}
	inbox := m.inbox(mount)
	bad := rapid.IntRange(0, 3).Draw(rt, "bad") == 0
	p := &modelPending{bad: bad}
	if rapid.Bool().Draw(rt, "batch") {
		p.tmp, p.final = m.scratchName(rt)
		p.files = m.goodBatchFiles(rt)
		if bad {
			p.files = append(p.files, modelBatchFile{rel: m.nextName(), data: m.badContent(rt, 1)})
		}
		writeBatch(rt, filepath.Join(inbox, p.tmp), p.files)
	} else {
		p.final = m.nextName()
		p.tmp = tempName(rt, p.final)
		f := modelBatchFile{}
		if bad {
			f.data = m.badContent(rt, rapid.IntRange(1, 3).Draw(rt, "rows"))
		} else {
			f.ids = m.nextIDs(rapid.IntRange(1, 3).Draw(rt, "rows"))
			f.data = encodeIDs(rt, f.ids)
		}
		p.files = []modelBatchFile{f}
		if err := os.WriteFile(filepath.Join(inbox, p.tmp), f.data, 0o644); err != nil {
			rt.Fatalf("write %s: %v", p.tmp, err)
		}
	}
	m.pending[mount] = append(m.pending[mount], p)
}

// renameStaged renames something staged by an earlier step to its final
// name: a commit of its rows as one version, or a refusal that changes
// nothing (then it stays staged, or is removed).
func (m *modelTable) renameStaged(rt *rapid.T) {
	var mounts []int
	for i := range m.mounts {
		if len(m.pending[i]) > 0 {
			mounts = append(mounts, i)
		}
	}
	if len(mounts) == 0 {
		rt.Skip("nothing staged")
	}
	mount := rapid.SampledFrom(mounts).Draw(rt, "mount")
	k := rapid.IntRange(0, len(m.pending[mount])-1).Draw(rt, "staged")
	p, inbox := m.pending[mount][k], m.inbox(mount)
	tmp := filepath.Join(inbox, p.tmp)
	for _, f := range p.files {
		m.checkStaged(rt, filepath.Join(tmp, f.rel), f.data)
	}
	before := tableListing(rt, m.dir)
	if len(m.pending[mount]) > 1 && rapid.Bool().Draw(rt, "onto a taken name first") {
		// Renames in the inbox never replace: nothing changes.
		other := m.pending[mount][(k+1)%len(m.pending[mount])]
		err := os.Rename(tmp, filepath.Join(inbox, other.tmp))
		if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.EISDIR) && !errors.Is(err, syscall.ENOTDIR) {
			rt.Fatalf("mount %d: rename of the staged %s onto the staged %s: %v, want EEXIST", mount, p.tmp, other.tmp, err)
		}
		m.checkVersions(rt)
		if after := tableListing(rt, m.dir); !maps.Equal(before, after) {
			rt.Fatalf("a rename onto a taken name changed the table's files")
		}
		for _, q := range []*modelPending{p, other} {
			for _, f := range q.files {
				m.checkStaged(rt, filepath.Join(inbox, q.tmp, f.rel), f.data)
			}
		}
	}
	err := os.Rename(tmp, filepath.Join(inbox, p.final))
	if p.bad {
		if !errors.Is(err, syscall.EINVAL) {
			rt.Fatalf("mount %d: rename of the bad staged %s to %s: %v, want EINVAL", mount, p.tmp, p.final, err)
		}
		m.checkRefused(rt, mount, before, p.final)
		if rapid.Bool().Draw(rt, "remove it") {
			if err := os.RemoveAll(tmp); err != nil {
				rt.Fatalf("remove the refused %s: %v", p.tmp, err)
			}
			m.pending[mount] = slices.Delete(m.pending[mount], k, k+1)
		}
		return
	}
	if err != nil {
		rt.Fatalf("mount %d: rename of the staged %s to %s: %v", mount, p.tmp, p.final, err)
	}
	m.pending[mount] = slices.Delete(m.pending[mount], k, k+1)
	if len(p.files) == 1 && p.files[0].rel == "" {
		m.commit(p.files[0].ids)
		m.checkCommit(rt, mount, 1, "commit", p.final)
		return
	}
	m.commitBatch(rt, mount, p.final, p.files)
}

// concurrentRenames stages a good file or batch in each mount and renames
// both at once: both commit, as two consecutive versions in some order
// (each mount's status says which), each with exactly its rows.
func (m *modelTable) concurrentRenames(rt *rapid.T) {
	type job struct {
		p   *modelPending
		err error
	}
	jobs := make([]job, len(m.mounts))
	for i := range m.mounts {
		p := &modelPending{}
		inbox := m.inbox(i)
		if rapid.Bool().Draw(rt, "batch") {
			p.tmp, p.final = m.scratchName(rt)
			p.files = m.goodBatchFiles(rt)
			writeBatch(rt, filepath.Join(inbox, p.tmp), p.files)
		} else {
			p.final = m.nextName()
			p.tmp = tempName(rt, p.final)
			f := modelBatchFile{ids: m.nextIDs(rapid.IntRange(1, 3).Draw(rt, "rows"))}
			f.data = encodeIDs(rt, f.ids)
			p.files = []modelBatchFile{f}
			if err := os.WriteFile(filepath.Join(inbox, p.tmp), f.data, 0o644); err != nil {
				rt.Fatalf("write %s: %v", p.tmp, err)
			}
		}
		jobs[i].p = p
	}
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs[i].err = os.Rename(filepath.Join(m.inbox(i), jobs[i].p.tmp), filepath.Join(m.inbox(i), jobs[i].p.final))
		}()
	}
	wg.Wait()
	order := make([]int, len(jobs)) // order[k] is the mount whose commit is version base+k
	base := len(m.rows)
	for i, j := range jobs {
		if j.err != nil {
			rt.Fatalf("mount %d: concurrent rename of %s to %s: %v", i, j.p.tmp, j.p.final, j.err)
		}
		e := lastStatus(rt, m.inbox(i))
		if e.Op != "commit" || e.File != j.p.final || e.Version == nil || *e.Version < int64(base) || *e.Version >= int64(base+len(jobs)) {
			rt.Fatalf("mount %d: last status %+v, want the commit of %s as version %d or %d", i, e, j.p.final, base, base+1)
		}
		order[int(*e.Version)-base] = i
	}
	if order[0] == order[1] {
		rt.Fatalf("both mounts' statuses give the same version %d", base)
	}
	for _, i := range order {
		var ids []int64
		n := 0
		for _, f := range jobs[i].p.files {
			if f.ids != nil {
				ids, n = append(ids, f.ids...), n+1
			}
		}
		m.commit(ids)
		adds, removes := commitActions(rt, m.dir, len(m.rows)-1)
		if adds != n || removes != 0 {
			rt.Fatalf("commit %d of %s has %d adds and %d removes, want %d adds", len(m.rows)-1, jobs[i].p.final, adds, removes, n)
		}
	}
}
