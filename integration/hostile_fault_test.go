package integration

// The fault-injection test of hostile storage: random operations change
// a local table's data files under a mount (delete, replace, truncate,
// symlink, FIFO, chmod, restore) between reads of every version and
// inbox appends. Every read is the file's right bytes or EIO (never
// other bytes, never a hang); every acknowledged append is in the log
// exactly once.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// hostileOps is the number of random operations of the quick test (the
// soak test runs more).
const hostileOps = 1000

func TestHostileStorage(t *testing.T) { runHostile(t, 1, hostileOps) }

// hostileFile is a data file of the table and the bytes the log means.
type hostileFile struct {
	key  string // under the table root
	want []byte
}

// hostileRun is the state of one run.
type hostileRun struct {
	t         *testing.T
	rng       *rand.Rand
	root, dir string // the table's root; MOUNTPOINT/t
	outside   string // where symlinks point
	files     []*hostileFile
	versions  int64 // @v0 .. @v(versions-1) exist
	acked     map[string]int64
	counts    map[string]int
}

// runHostile runs ops random operations with seed.
func runHostile(t *testing.T, seed uint64, ops int) {
	root := testenv.CopyFixture(t, fixtureAppend)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, Refresh: 50 * time.Millisecond})
	r := &hostileRun{t: t, rng: rand.New(rand.NewPCG(seed, 15)), root: root, dir: filepath.Join(mnt, "t"),
		outside: t.TempDir(), acked: map[string]int64{}, counts: map[string]int{}}
	snap := latestSnapshot(t, root)
	r.versions = snap.Version() + 1
	for _, f := range liveFiles(t, snap) {
		data, err := os.ReadFile(filepath.Join(root, f.Key))
		if err != nil {
			t.Fatal(err)
		}
		r.files = append(r.files, &hostileFile{key: f.Key, want: data})
	}
	for i := 0; i < ops && !t.Failed(); i++ {
		r.step(i)
	}
	for _, f := range r.files {
		r.restore(f)
	}
	r.checkLog()
	if r.counts["read: right bytes"] == 0 || r.counts["read: EIO"] == 0 || len(r.acked) == 0 {
		t.Errorf("the run proved little: %v", r.counts)
	}
	t.Logf("seed %d, %d operations: %v", seed, ops, r.counts)
}

// step does one random operation.
func (r *hostileRun) step(i int) {
	f := r.files[r.rng.IntN(len(r.files))]
	p := filepath.Join(r.root, f.key)
	ops := []struct {
		name string
		do   func()
	}{
		{"read", r.readSome}, {"read", r.readSome}, {"read", r.readSome},
		{"append", func() { r.appendOne(i) }},
		{"delete", func() { os.Remove(p) }},
		{"restore", func() { r.restore(f) }},
		{"replace", func() { r.replaceWith(f, append(bytes.Clone(f.want), "trailing junk"...)) }},
		{"truncate", func() { os.Truncate(p, int64(r.rng.IntN(len(f.want)))) }},
		{"symlink", func() { r.symlinkOut(f) }},
		{"fifo", func() { os.Remove(p); syscall.Mkfifo(p, 0o644) }},
		{"chmod", func() { os.Chmod(p, os.FileMode(r.rng.IntN(2)*0o644)) }},
	}
	op := ops[r.rng.IntN(len(ops))]
	r.counts[op.name]++
	op.do()
}

// restore puts the right bytes back under the key (a new inode).
func (r *hostileRun) restore(f *hostileFile) { r.replaceWith(f, f.want) }

// replaceWith renames a file holding data over the key.
func (r *hostileRun) replaceWith(f *hostileFile, data []byte) {
	p := filepath.Join(r.root, f.key)
	tmp := filepath.Join(filepath.Dir(p), ".hostile-tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		r.t.Fatal(err)
	}
	os.RemoveAll(p)
	if err := os.Rename(tmp, p); err != nil {
		r.t.Fatal(err)
	}
}

// symlinkOut replaces the key by a symlink to a root-only file of the
// same size outside the table (other bytes: a reader must never see them).
func (r *hostileRun) symlinkOut(f *hostileFile) {
	out := filepath.Join(r.outside, filepath.Base(f.key))
	if err := os.WriteFile(out, bytes.Repeat([]byte("S"), len(f.want)), 0o600); err != nil {
		r.t.Fatal(err)
	}
	p := filepath.Join(r.root, f.key)
	os.RemoveAll(p)
	if err := os.Symlink(out, p); err != nil {
		r.t.Fatal(err)
	}
}

// readSome reads a random file of a random version through the mount: the
// right bytes or EIO.
func (r *hostileRun) readSome() {
	v := r.rng.Int64N(r.versions)
	dir := filepath.Join(r.dir, fmt.Sprintf("@v%d", v))
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.t.Errorf("list %s: %v", dir, err)
		return
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".parquet") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return
	}
	name := names[r.rng.IntN(len(names))]
	var want []byte
	for _, f := range r.files {
		if filepath.Base(f.key) == name {
			want = f.want
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err == nil {
		r.counts["read: right bytes"]++
	} else {
		r.counts["read: EIO"]++
	}
	switch {
	case err == nil && !bytes.Equal(got, want):
		r.t.Errorf("read @v%d/%s: %d wrong bytes (want %d)", v, name, len(got), len(want))
	case err != nil && !errors.Is(err, syscall.EIO):
		r.t.Errorf("read @v%d/%s: %v, want the bytes or EIO", v, name, err)
	}
}

// appendOne drops a new file into the inbox; an acknowledged one is
// remembered, and its bytes join the files the storage may damage.
func (r *hostileRun) appendOne(i int) {
	name := fmt.Sprintf("hostile-%d.parquet", i)
	data := parquetBytes(r.t, []basicRow{{ptr(name), ptr(int64(i)), nil}})
	if err := os.WriteFile(filepath.Join(r.dir, "inbox", name), data, 0o644); err != nil {
		if !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.EROFS) {
			r.t.Errorf("append %s: %v, want success, EIO or EROFS", name, err)
		}
		return
	}
	snap := latestSnapshot(r.t, r.root)
	r.versions = snap.Version() + 1
	r.acked[name] = snap.Version()
	r.counts["append: acknowledged"]++
	for _, f := range liveFiles(r.t, snap) {
		known := false
		for _, have := range r.files {
			known = known || have.key == f.Key
		}
		if !known {
			r.files = append(r.files, &hostileFile{key: f.Key, want: data})
		}
	}
}

// checkLog counts the source file names of every commit: each
// acknowledged append exactly once.
func (r *hostileRun) checkLog() {
	seen := map[string]int{}
	for v := int64(0); v < r.versions; v++ {
		data, err := os.ReadFile(filepath.Join(r.root, "_delta_log", fmt.Sprintf("%020d.json", v)))
		if err != nil {
			r.t.Fatalf("commit %d: %v", v, err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var a struct {
				CommitInfo *struct {
					Sources []string `json:"deltafs.sourceFiles"`
				} `json:"commitInfo"`
			}
			if json.Unmarshal(line, &a) == nil && a.CommitInfo != nil {
				for _, s := range a.CommitInfo.Sources {
					seen[s]++
				}
			}
		}
	}
	for name := range r.acked {
		if seen[name] != 1 {
			r.t.Errorf("acknowledged append %s is in the log %d times", name, seen[name])
		}
	}
}
