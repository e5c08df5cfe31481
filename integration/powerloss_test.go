package integration

// Power-loss safety of appends: the table lives on powerfs, a
// FUSE file system in the test that keeps what was not fsynced only in
// memory and drops it when the power is cut (every file's unsynced bytes,
// every name its directory did not fsync). The real commit paths run on
// it: `deltafs append`'s (files copied in), the inbox's (staged files
// hard-linked in), commits, background checkpoints and _last_checkpoint.
// The power is cut after a random number of requests, again and again;
// after each loss the table is mounted again as after a reboot and must
// hold every acknowledged append, and every version its log holds must
// read exactly: each commit parses, each checkpoint holds its version's
// files, _last_checkpoint names a whole checkpoint, each data file a
// version names exists with all its bytes. A run is reproducible from
// the seed it logs (DELTAFS_POWERLOSS_SEED=N). `make test` runs a short
// series; the soak build tag (powerloss_soak_test.go) a long one.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/internal/testkit/powerfs"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/writeback"
)

// Appends of the short series and the mean number of mutating requests
// between two losses (powerloss_soak_test.go raises the appends;
// DELTAFS_POWERLOSS_APPENDS=n sets them).
var (
	powerLossAppends = 200
	powerLossMeanOps = 120 // about 8 appends
)

// plRun is one series of appends and power losses on one table.
type plRun struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	fsys *powerfs.FS
	mnt  string       // where powerfs is mounted
	srv  *fuse.Server // nil while unmounted
	src  string       // `deltafs append`'s source files (a local disk, not powerfs)

	store *blobstore.Store
	c     *writeback.Committer

	rowSeq   int64               // the last row's number: every body differs
	newParts int                 // partition values made up so far
	base     int64               // the fixture's latest version
	sums     map[[32]byte]bool   // every body handed to an append, and the fixture's files
	acked    []plAck             // acknowledged appends, in order
	want     map[string][32]byte // data key of an acknowledged append -> its body's sum
	// seen holds the identity (size, mtime, inode) of each file whose
	// bytes a check read in full: a later check of the same identity only
	// stats it (a power loss that changes a file's bytes changes its mtime).
	seen    map[string]plFileID
	commits map[int64][]plAdd // the adds of each commit read, while its identity holds
	stats   plStats
}

type plFileID struct {
	size, mtime int64
	ino         uint64
}

// unchanged reports whether path is as a full check last found it, and
// else returns its identity for remember.
func (r *plRun) unchanged(path string) (bool, plFileID) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, plFileID{}
	}
	id := plFileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = st.Ino
	}
	return r.seen[path] == id, id
}

type plAck struct {
	version int64
	keys    []string
}

type plStats struct {
	appends, acked, failed, losses, versions, checkpoints, verifiedVersions int
	landedUnacked                                                           int
}

// table and staging are on powerfs: the inbox stages files on the table's
// file system, so that a commit hard-links them in.
func (r *plRun) table() string   { return filepath.Join(r.mnt, "table") }
func (r *plRun) staging() string { return filepath.Join(r.mnt, "staging") }

func (r *plRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("DELTAFS_POWERLOSS_SEED=%d: %s\n%v", r.seed, fmt.Sprintf(format, args...), r.fsys)
}

func TestPowerLossAppends(t *testing.T) {
	testenv.RequireFUSE(t)
	n := powerLossAppends
	if v, err := strconv.Atoi(os.Getenv("DELTAFS_POWERLOSS_APPENDS")); err == nil {
		n = v
	}
	r := newPLRun(t)
	for i := 0; i < n; i++ {
		r.appendOnce(i)
		if r.fsys.Down() {
			r.powerLoss()
		}
	}
	r.fsys.CutPower() // a loss with nothing under way: everything acknowledged stays
	r.powerLoss()
	r.verify(true)
	s := r.stats
	t.Logf("DELTAFS_POWERLOSS_SEED=%d: %d appends (%d acknowledged, %d failed by a loss, %d of those landed), %d losses, %d versions, %d checkpoints; %v",
		r.seed, s.appends, s.acked, s.failed, s.landedUnacked, s.losses, s.versions, s.checkpoints, r.fsys)
	if st := r.fsys.Stats(); s.losses < n/40 || st.LostNames == 0 {
		t.Errorf("the series did not exercise losses: %d losses, %+v", s.losses, st)
	}
	if s.checkpoints == 0 {
		t.Errorf("no checkpoint was written in %d appends", s.appends)
	}
}

func newPLRun(t *testing.T) *plRun {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("DELTAFS_POWERLOSS_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("DELTAFS_POWERLOSS_SEED=%d", seed)
	r := &plRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 21)), fsys: powerfs.New(),
		mnt: t.TempDir(), src: t.TempDir(), sums: map[[32]byte]bool{}, want: map[string][32]byte{}, seen: map[string]plFileID{}, commits: map[int64][]plAdd{}}
	fixture := testenv.Fixture(t, fixturePartitioned)
	if err := r.fsys.Load(fixture, "table"); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(fixture, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			data, _ := os.ReadFile(p)
			r.sums[sha256.Sum256(data)] = true
		}
		return nil
	})
	r.mount()
	t.Cleanup(r.close)
	r.makeStaging()
	r.base = r.readLog().latest
	r.arm()
	return r
}

// arm cuts the power after a random number of mutating requests.
func (r *plRun) arm() { r.fsys.Arm(1 + r.rng.Int64N(int64(2*powerLossMeanOps))) }

// mount serves powerfs and opens the table as a fresh process would.
func (r *plRun) mount() {
	srv, err := r.fsys.Mount(r.mnt)
	if err != nil {
		r.fatalf("mount powerfs: %v", err)
	}
	r.srv = srv
	ctx := context.Background()
	if r.store, err = blobstore.Open(ctx, r.table()); err != nil {
		r.fatalf("open %s: %v", r.table(), err)
	}
	log := slog.New(slog.NewTextHandler(testWriter{r.t}, &slog.HandlerOptions{Level: slog.LevelError}))
	r.c = writeback.New(delta.Open(r.store, delta.Options{}), writeback.Options{
		EngineInfo: "deltafs-powerloss-test", Logger: log, TempDir: r.src,
	})
}

// close stops the committer and unmounts powerfs.
func (r *plRun) close() {
	if r.c != nil {
		r.c.Close()
		r.store.Close()
		r.c = nil
	}
	if r.srv == nil {
		return
	}
	var err error
	for range 50 {
		if err = r.srv.Unmount(); err == nil {
			r.srv = nil
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.fatalf("unmount powerfs (a descriptor left open on the table?): %v; open: %v", err, openUnder(r.mnt))
}

// openUnder lists the process's descriptors open under dir.
func openUnder(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(p, dir) {
			out = append(out, p)
		}
	}
	return out
}

// powerLoss unmounts, applies the loss, mounts again (a reboot: the
// inbox's staging is emptied as a mount does) and checks the table.
func (r *plRun) powerLoss() {
	r.stats.losses++
	r.close()
	r.fsys.PowerLoss()
	r.mount()
	os.RemoveAll(r.staging())
	r.makeStaging()
	r.verify(false)
	r.arm()
}

// makeStaging makes the inbox's staging dir, as a mount does.
func (r *plRun) makeStaging() {
	if err := os.Mkdir(r.staging(), 0o755); err != nil {
		r.fatalf("make the staging dir: %v", err)
	}
}

// appendOnce appends 1 to 3 files, each copied in (`deltafs append`) or
// staged on the table's file system and linked in (the inbox), and
// records what was acknowledged.
func (r *plRun) appendOnce(i int) {
	r.stats.appends++
	var files []writeback.File
	sums := map[string][32]byte{} // LocalPath -> sum
	for j := range 1 + r.rng.IntN(3) {
		body := r.body()
		f := writeback.File{Name: fmt.Sprintf("a%d-%d.parquet", i, j), PartitionValues: r.partition()}
		if r.rng.IntN(2) == 0 {
			f.LocalPath, f.Owned = filepath.Join(r.staging(), f.Name), true
		} else {
			f.LocalPath = filepath.Join(r.src, f.Name)
		}
		if err := os.WriteFile(f.LocalPath, body, 0o644); err != nil {
			if r.fsys.Down() {
				return // the power went while staging: nothing was handed over
			}
			r.fatalf("stage %s: %v", f.LocalPath, err)
		}
		sums[f.LocalPath] = sha256.Sum256(body)
		r.sums[sums[f.LocalPath]] = true
		files = append(files, f)
	}
	res, err := r.c.Append(context.Background(), files)
	for _, f := range files {
		os.Remove(f.LocalPath) // the inbox drops a committed staged name; the user's copy is theirs
	}
	if err != nil {
		if !r.fsys.Down() {
			r.fatalf("append %d: %v (with the power on)", i, err)
		}
		r.stats.failed++
		return
	}
	r.stats.acked++
	r.acked = append(r.acked, plAck{version: res.Version, keys: res.Added})
	for k, key := range res.Added {
		r.want[key] = sums[files[k].LocalPath]
	}
	r.waitCheckpoints()
}

// waitCheckpoints waits for the background checkpoint the append may have
// started, or for the power to go while it is written (its retries would
// wait seconds): one append at a time keeps the requests in the order
// the seed gives.
func (r *plRun) waitCheckpoints() {
	done, c := make(chan struct{}), r.c
	go func() { c.WaitCheckpoints(); close(done) }()
	for {
		select {
		case <-done:
			return
		case <-time.After(time.Millisecond):
			if r.fsys.Down() {
				return
			}
		}
	}
}

// partition is a letter= value: often a new one, whose directory the
// append makes (and must make durable), sometimes null.
func (r *plRun) partition() map[string]*string {
	switch n := r.rng.IntN(8); {
	case n == 0:
		return map[string]*string{"letter": nil}
	case n < 4:
		r.newParts++
		return map[string]*string{"letter": ptr(fmt.Sprintf("p%d", r.newParts))}
	default:
		return map[string]*string{"letter": ptr(string(rune('a' + n - 4)))}
	}
}

// body is a small Parquet file of the table's data columns with new
// numbers.
func (r *plRun) body() []byte {
	rows := make([]basicDataRow, 1+r.rng.IntN(4))
	for i := range rows {
		r.rowSeq++
		rows[i] = basicDataRow{Number: ptr(r.rowSeq)}
	}
	if r.rng.IntN(16) == 0 { // now and then a file of several write requests
		for range 30000 {
			r.rowSeq++
			rows = append(rows, basicDataRow{Number: ptr(r.rowSeq), Float: ptr(float64(r.rowSeq) / 7)})
		}
	}
	return parquetBytes(r.t, rows)
}

// plLog is the surviving log as the test reads it, without the engine.
type plLog struct {
	latest      int64
	addedAt     map[string]int64 // data key -> version of its add
	size        map[string]int64 // data key -> add.size
	checkpoints []int64
	lastCP      []byte // _last_checkpoint, nil when absent
}

// verify checks the table after a loss against the log and what was
// acknowledged; all versions through the engine when all is set, else
// the latest and a few.
func (r *plRun) verify(all bool) {
	lg := r.readLog()
	r.stats.versions = int(lg.latest) + 1
	r.stats.landedUnacked = int(lg.latest-r.base) - r.stats.acked
	r.stats.checkpoints = len(lg.checkpoints)
	for _, a := range r.acked {
		if a.version > lg.latest {
			r.fatalf("acknowledged version %d is gone: the log ends at %d", a.version, lg.latest)
		}
		for _, key := range a.keys {
			if v, ok := lg.addedAt[key]; !ok || v != a.version {
				r.fatalf("acknowledged file %s of version %d: added at version %d (found: %v)", key, a.version, v, ok)
			}
		}
	}
	for key, v := range lg.addedAt {
		r.checkDataFile(key, v, lg.size[key])
	}
	for _, cp := range lg.checkpoints {
		r.checkCheckpoint(lg, cp)
	}
	r.checkLastCheckpoint(lg)
	versions := []int64{lg.latest}
	if all {
		versions = nil
		for v := range lg.latest + 1 {
			versions = append(versions, v)
		}
	} else {
		for range 3 {
			versions = append(versions, r.rng.Int64N(lg.latest+1))
		}
	}
	r.checkEngine(lg, versions)
}

// readLog lists _delta_log and replays every commit.
func (r *plRun) readLog() *plLog {
	dir := filepath.Join(r.table(), "_delta_log")
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.fatalf("list %s: %v", dir, err)
	}
	lg := &plLog{latest: -1, addedAt: map[string]int64{}, size: map[string]int64{}}
	var commits []int64
	for _, e := range ents {
		if e.Name() == "_last_checkpoint" {
			if lg.lastCP, err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				r.fatalf("read %s/_last_checkpoint: %v", dir, err)
			}
			continue
		}
		f, ok := delta.ParseLogName(e.Name())
		switch {
		case ok && f.Kind == delta.KindCommit:
			commits = append(commits, f.Version)
		case ok && f.Kind == delta.KindCheckpoint:
			lg.checkpoints = append(lg.checkpoints, f.Version)
		}
	}
	slices.Sort(commits)
	for i, v := range commits {
		if v != int64(i) {
			r.fatalf("the log has a gap: version %d follows %d", v, i-1)
		}
		r.replayCommit(lg, v)
	}
	lg.latest = int64(len(commits)) - 1
	return lg
}

func (r *plRun) replayCommit(lg *plLog, v int64) {
	path := filepath.Join(r.table(), filepath.FromSlash(delta.CommitKey(v)))
	same, id := r.unchanged(path)
	adds, ok := r.commits[v]
	if !same || !ok {
		var err error
		if adds, err = readCommitAdds(path); err != nil {
			r.fatalf("table %s version %d: commit %s: %v", r.table(), v, path, err)
		}
		r.commits[v] = adds
		r.seen[path] = id
	}
	for _, a := range adds {
		lg.addedAt[a.key], lg.size[a.key] = v, a.size
	}
}

type plAdd struct {
	key  string
	size int64
}

// readCommitAdds parses a commit of this blind-append test: its adds.
func readCommitAdds(path string) ([]plAdd, error) {
	data, err := os.ReadFile(path)
	if err == nil && len(data) == 0 {
		err = errors.New("empty")
	}
	if err != nil {
		return nil, err
	}
	var adds []plAdd
	err = action.Parse(data, func(a *delta.Action) error {
		if a.Remove != nil {
			return fmt.Errorf("a remove of %s in a blind-append test", a.Remove.Path)
		}
		if a.Add != nil {
			key, err := url.PathUnescape(a.Add.Path)
			if err != nil {
				return err
			}
			adds = append(adds, plAdd{key, a.Add.Size})
		}
		return nil
	})
	return adds, err
}

// checkDataFile reads a data file version v added: all its bytes, the
// body handed to that append (exactly, when it was acknowledged).
func (r *plRun) checkDataFile(key string, v, size int64) {
	path := filepath.Join(r.table(), filepath.FromSlash(key))
	same, id := r.unchanged(path)
	if same {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		r.fatalf("table %s version %d: data file %s: %v", r.table(), v, key, err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != size || !r.sums[sum] {
		r.fatalf("table %s version %d: data file %s has %d bytes (add.size %d) that no append wrote", r.table(), v, key, len(data), size)
	}
	if w, ok := r.want[key]; ok && w != sum {
		r.fatalf("table %s version %d: acknowledged data file %s holds another body", r.table(), v, key)
	}
	r.seen[path] = id
}

// checkCheckpoint decodes the checkpoint of version cp: it must hold
// exactly the files of that version.
func (r *plRun) checkCheckpoint(lg *plLog, cp int64) {
	path := filepath.Join(r.table(), filepath.FromSlash(delta.CheckpointKey(cp)))
	if cp > lg.latest {
		r.fatalf("table %s: checkpoint %s of version %d past the log's end %d", r.table(), path, cp, lg.latest)
	}
	same, id := r.unchanged(path)
	if same {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		r.fatalf("table %s version %d: checkpoint %s: %v", r.table(), cp, path, err)
	}
	got := map[string]bool{}
	err = checkpoint.ReadActions(bytes.NewReader(data), int64(len(data)), func(a *delta.Action) error {
		if a.Add != nil {
			key, _ := url.PathUnescape(a.Add.Path)
			got[key] = true
		}
		return nil
	})
	if err != nil {
		r.fatalf("table %s version %d: checkpoint %s (%d bytes): %v", r.table(), cp, path, len(data), err)
	}
	for key, v := range lg.addedAt {
		if (v <= cp) != got[key] {
			r.fatalf("table %s version %d: checkpoint %s: file %s (added at %d) present: %v", r.table(), cp, path, key, v, got[key])
		}
	}
	r.seen[path] = id
}

// checkLastCheckpoint: when present, the hint parses and names a
// checkpoint that exists with the size and rows it says.
func (r *plRun) checkLastCheckpoint(lg *plLog) {
	if lg.lastCP == nil {
		return
	}
	var lc delta.LastCheckpoint
	if err := json.Unmarshal(lg.lastCP, &lc); err != nil {
		r.fatalf("table %s: _last_checkpoint (%d bytes) does not parse: %v", r.table(), len(lg.lastCP), err)
	}
	path := filepath.Join(r.table(), filepath.FromSlash(delta.CheckpointKey(lc.Version)))
	fi, err := os.Stat(path)
	if err != nil {
		r.fatalf("table %s: _last_checkpoint names version %d: %v", r.table(), lc.Version, err)
	}
	if lc.SizeInBytes != nil && *lc.SizeInBytes != fi.Size() {
		r.fatalf("table %s: _last_checkpoint says checkpoint %d has %d bytes, %s has %d", r.table(), lc.Version, *lc.SizeInBytes, path, fi.Size())
	}
	rows := int64(0)
	data, _ := os.ReadFile(path)
	checkpoint.ReadActions(bytes.NewReader(data), int64(len(data)), func(*delta.Action) error { rows++; return nil })
	if rows != lc.Size {
		r.fatalf("table %s: _last_checkpoint says checkpoint %d has %d actions, %s has %d", r.table(), lc.Version, lc.Size, path, rows)
	}
}

// checkEngine builds the versions with the engine (from the newest
// checkpoint at or before each) on a table opened afresh and compares
// their files with the log's.
func (r *plRun) checkEngine(lg *plLog, versions []int64) {
	ctx := context.Background()
	tbl := delta.Open(r.store, delta.Options{})
	latest, err := tbl.Latest(ctx)
	if err != nil {
		r.fatalf("table %s: latest: %v", r.table(), err)
	}
	if latest.Version() != lg.latest {
		r.fatalf("table %s: the engine's latest is %d, the log ends at %d", r.table(), latest.Version(), lg.latest)
	}
	for _, v := range versions {
		snap, err := tbl.Snapshot(ctx, v)
		if err != nil {
			r.fatalf("table %s version %d: %v", r.table(), v, err)
		}
		want := 0
		for _, at := range lg.addedAt {
			if at <= v {
				want++
			}
		}
		got := 0
		for _, a := range snap.Files() {
			key, _ := url.PathUnescape(a.Path)
			if at, ok := lg.addedAt[key]; !ok || at > v {
				r.fatalf("table %s version %d: the engine lists %s, which the log adds at %d (%v)", r.table(), v, key, at, ok)
			}
			got++
		}
		if got != want {
			r.fatalf("table %s version %d: the engine lists %d files, the log %d", r.table(), v, got, want)
		}
		r.stats.verifiedVersions++
	}
}
