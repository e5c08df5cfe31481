package integration

// Crash safety of appends: `deltafs mount` and
// `deltafs append` are killed with SIGKILL at named points of the append
// path (the DELTAFS_CRASHPOINT hook of writeback) and at random times,
// many times in a row on one copy of a fixture table, restarting each
// time. After every kill the table must be consistent: contiguous
// versions that all build, every acknowledged append present exactly
// once with the bytes written, nothing half-present, orphan data files
// only for unacknowledged appends. `make test` runs a short series; the
// soak build tag (crash_soak_test.go) a long one.

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/writeback"
)

// Trial counts of the short series (crash_soak_test.go raises them;
// DELTAFS_CRASH_TRIALS=n sets both).
var (
	crashMountTrials  = 12
	crashAppendTrials = 8
)

// crashPoints are the named points, tried in turn before random kills.
var crashPoints = []string{
	writeback.CrashStaged, writeback.CrashUploading, writeback.CrashUploaded,
	writeback.CrashCommitting, writeback.CrashCommitted, writeback.CrashCheckpointing,
}

// crashRun is the state of one series of crash trials on one table.
type crashRun struct {
	t        *testing.T
	rng      *rand.Rand
	root     string // the table copy
	cacheDir string // --cache-dir of every mount (staging lives there)
	tmpDir   string // TMPDIR of the processes (fileblob's upload temp files)
	big      []byte // a ~4 MiB Parquet body shared by the big files

	latest   int64               // the table's version after the last trial
	baseOrph int                 // data files no add named before the first trial
	sums     map[string][32]byte // every file name given to deltafs -> sha256
	acked    map[string]bool     // names whose close()/append succeeded
	groups   [][]string          // names given to one `deltafs append`
	stats    crashStats
}

// crashStats are the figures a series reports.
type crashStats struct {
	trials, acked, unacked, landed int
	points                         int // trials at a named point so far
	byPoint                        map[string]int
	phase                          map[string]int // where random kills found the writer
	stagedLeft, stagingDirsGone    int
	orphans, logTmps, uploadTmps   int
	partial                        int
}

func newCrashRun(t *testing.T) *crashRun {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("DELTAFS_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("DELTAFS_CRASH_SEED=%d", seed)
	r := &crashRun{t: t, rng: rand.New(rand.NewPCG(seed, 0)), root: testenv.CopyFixture(t, fixtureAppend),
		cacheDir: t.TempDir(), tmpDir: t.TempDir(), sums: map[string][32]byte{}, acked: map[string]bool{},
		stats: crashStats{byPoint: map[string]int{}, phase: map[string]int{}}}
	r.big = bigParquet(t, r.rng)
	a := auditTable(t, r.root)
	r.latest, r.baseOrph = a.latest, len(a.orphans)
	return r
}

// crashTrials is n, or DELTAFS_CRASH_TRIALS when set.
func crashTrials(n int) int {
	if v, err := strconv.Atoi(os.Getenv("DELTAFS_CRASH_TRIALS")); err == nil && v > 0 {
		return v
	}
	return n
}

// env is the environment of a deltafs process: TMPDIR and the crash point.
func (r *crashRun) env(point string) []string {
	env := []string{"TMPDIR=" + r.tmpDir}
	if point != "" {
		env = append(env, writeback.EnvCrashPoint+"="+point)
	}
	return env
}

// plan picks the crash of trial i: a named point, crashing on its hit
// 1..maxHit, for the first round of points and then every other trial;
// otherwise a random kill delay below maxDelay.
func (r *crashRun) plan(i, maxHit int, maxDelay time.Duration) (point string, delay time.Duration) {
	if i < len(crashPoints) || i%2 == 0 {
		name := crashPoints[r.stats.points%len(crashPoints)]
		r.stats.points++
		r.stats.byPoint[name]++
		if name == writeback.CrashCheckpointing {
			return name, 0
		}
		return fmt.Sprintf("%s@%d", name, 1+r.rng.IntN(maxHit)), 0
	}
	r.stats.byPoint["random kill"]++
	return "", time.Duration(r.rng.Int64N(int64(maxDelay)))
}

func TestCrashMountAppends(t *testing.T) {
	r := newCrashRun(t)
	for i := range crashTrials(crashMountTrials) {
		r.mountTrial(i)
		if t.Failed() {
			t.Fatalf("stopping after trial %d; mount log above", i)
		}
	}
	r.finalMount()
	r.report("deltafs mount")
}

func TestCrashAppendCommand(t *testing.T) {
	r := newCrashRun(t)
	for i := range crashTrials(crashAppendTrials) {
		r.appendTrial(i)
		if t.Failed() {
			t.Fatalf("stopping after trial %d", i)
		}
	}
	r.finalAppend()
	r.report("deltafs append")
}

// mountTrial mounts the table, drops files into the inbox until the
// mount is killed (by its crash point or after a random delay), and
// checks the table.
func (r *crashRun) mountTrial(i int) {
	t := r.t
	point, delay := r.plan(i, 3, 1200*time.Millisecond)
	m := r.startCrashMount(point)
	drops := make(chan []dropResult, 1)
	limit := 14 // enough to reach a checkpoint version
	if point == "" {
		limit = 1000 // keep writing until the kill
	}
	go func() { drops <- r.dropFiles(filepath.Join(m.mnt, "t", "inbox"), i, limit) }()
	if point == "" {
		time.Sleep(delay)
		m.kill()
	}
	var results []dropResult
	if point != "" {
		select {
		case <-m.done:
		case results = <-drops:
			if last := results[len(results)-1]; last.acked {
				t.Errorf("trial %d (%s): the writer finished %d files and the crash point never fired", i, point, len(results))
				m.kill()
			}
		}
	}
	if !m.wait(30*time.Second) || !m.killedBySIGKILL() {
		t.Fatalf("trial %d (%s): mount did not die of SIGKILL: %v\n%s", i, point, m.cmd.ProcessState, m.log.String())
	}
	detachMount(m.mnt)
	if results == nil {
		results = <-drops
	}
	r.recordDrops(results, point == "")
	r.countStaged(m.cmd.Process.Pid)
	r.check(fmt.Sprintf("mount trial %d (%s, killed after %v)", i, point, delay))
	if t.Failed() {
		t.Logf("mount log:\n%s", m.log.String())
	}
}

// startCrashMount starts a mount of the table and checks the restart:
// the staging of the dead mounts is gone and @latest is the table's.
func (r *crashRun) startCrashMount(point string) *procMount {
	t := r.t
	m := startMount(t, mountOpts{cacheDir: r.cacheDir, env: r.env(point), sources: []string{"t=" + r.root}})
	if dirs := r.stagingDirs(-1); len(dirs) != 1 {
		t.Errorf("staging after a restart: %v, want only the new mount's (the dead mounts' removed)", dirs)
	} else {
		r.stats.stagingDirsGone++
	}
	if got, err := os.Readlink(filepath.Join(m.mnt, "t", "@latest")); err != nil || got != fmt.Sprintf("@v%d", r.latest) {
		t.Errorf("restarted mount: @latest -> %q, %v; want @v%d", got, err, r.latest)
	}
	return m
}

// dropResult is one file written into the inbox.
type dropResult struct {
	name  string
	acked bool   // every write and close() returned success
	phase string // where it failed: "write" (staging) or "close" (commit)
}

// dropFiles writes files into inbox one after the other, alternately
// small and big, until one fails (the mount died) or limit are written.
func (r *crashRun) dropFiles(inbox string, trial, limit int) []dropResult {
	var out []dropResult
	for j := range limit {
		name := fmt.Sprintf("m%03d-%02d.parquet", trial, j)
		body := r.body(name, j%2 == 1)
		phase, err := writeInChunks(filepath.Join(inbox, name), body)
		out = append(out, dropResult{name: name, acked: err == nil, phase: phase})
		if err != nil {
			break
		}
	}
	return out
}

// body returns the Parquet bytes for name (big: the shared ~4 MiB body,
// else one row naming the file) and records their sum.
func (r *crashRun) body(name string, big bool) []byte {
	data := r.big
	if !big {
		data = parquetBytes(r.t, []basicRow{{Letter: ptr(name), Number: ptr(int64(len(r.sums)))}})
	}
	r.sums[name] = sha256Sum(data)
	return data
}

// writeInChunks writes data to path in 256 KiB writes and closes it; on
// failure it says in which phase.
func writeInChunks(path string, data []byte) (string, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return "open", err
	}
	for off := 0; off < len(data); off += 256 << 10 {
		if _, err := f.Write(data[off:min(off+256<<10, len(data))]); err != nil {
			f.Close()
			return "write", err
		}
	}
	if err := f.Close(); err != nil {
		return "close", err
	}
	return "", nil
}

func (r *crashRun) recordDrops(results []dropResult, random bool) {
	for _, d := range results {
		switch {
		case d.acked:
			r.acked[d.name] = true
			r.stats.acked++
			continue
		case d.phase == "open":
			continue // the mount was gone: nothing was written
		}
		r.stats.unacked++
		if random {
			r.stats.phase[d.phase]++
		}
	}
}

// stagingDirs lists the mounts' staging dirs, or only those of pid >= 0.
func (r *crashRun) stagingDirs(pid int) []string {
	ents, _ := os.ReadDir(filepath.Join(r.cacheDir, "inbox-staging"))
	var out []string
	for _, e := range ents {
		if pid < 0 || strings.HasPrefix(e.Name(), fmt.Sprintf("mount-%d-", pid)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// countStaged counts the staged files the dead mount pid left behind.
func (r *crashRun) countStaged(pid int) {
	for _, d := range r.stagingDirs(pid) {
		filepath.WalkDir(filepath.Join(r.cacheDir, "inbox-staging", d), func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				r.stats.stagedLeft++
			}
			return nil
		})
	}
}

// check audits the table after a trial and updates the counts.
func (r *crashRun) check(what string) {
	t := r.t
	t.Helper()
	a := auditTable(t, r.root)
	a.checkConsistent(t, r.root, r.latest)
	r.stats.landed = a.checkAppends(t, r.root, r.sums, r.acked, r.groups)
	orphans := len(a.orphans) - r.baseOrph
	if lost := r.stats.unacked - r.stats.landed; orphans+len(a.partial) > lost {
		t.Errorf("%s: %d orphan data files and %d partial uploads, but only %d unacknowledged appends are missing: %v %v",
			what, orphans, len(a.partial), lost, a.orphans, a.partial)
	}
	for _, p := range a.partial {
		// An upload's temp file is its data file's name behind a dot
		// (writeback.copyLocal, blobstore's local put) or without one.
		if !strings.HasPrefix(strings.TrimPrefix(filepath.Base(p), "."), "part-00000-") {
			t.Errorf("%s: temp file %s is not an upload's", what, p)
		}
	}
	r.stats.orphans, r.stats.logTmps, r.stats.partial = orphans, len(a.logTmps), len(a.partial)
	tmps, _ := filepath.Glob(filepath.Join(r.tmpDir, "*"))
	r.stats.uploadTmps = len(tmps)
	r.stats.trials++
	r.latest = a.latest
}

// finalMount restarts the mount once more without a crash point: the
// last dead mount's staging goes, and a drop still commits.
func (r *crashRun) finalMount() {
	m := r.startCrashMount("")
	name := "final.parquet"
	if _, err := writeInChunks(filepath.Join(m.mnt, "t", "inbox", name), r.body(name, false)); err != nil {
		r.t.Fatalf("append after the crashes: %v\n%s", err, m.log.String())
	}
	r.acked[name] = true
	a := auditTable(r.t, r.root)
	a.checkAppends(r.t, r.root, r.sums, r.acked, r.groups)
	checkVersionsBuild(r.t, r.root, 0, a.latest)
	if a.latest != r.latest+1 {
		r.t.Errorf("final append landed at version %d, want %d", a.latest, r.latest+1)
	}
}

// appendTrial runs `deltafs append` of two files (one small, one big)
// killed at a crash point or after a random delay, after zero or more
// clean appends (enough to reach a checkpoint version for
// "checkpointing").
func (r *crashRun) appendTrial(i int) {
	point, _ := r.plan(i, 1, time.Millisecond)
	clean := r.rng.IntN(2)
	if strings.HasPrefix(point, writeback.CrashCheckpointing) {
		clean = int(9 - r.latest%10) // the crashing append lands at a multiple of 10
	}
	for j := range clean {
		r.appendFiles(i, fmt.Sprintf("c%d", j), nil, 0, false)
	}
	var delay time.Duration
	if point == "" {
		// Kill within the time a whole append of the same files takes.
		start := time.Now()
		r.appendFiles(i, "timed", nil, 0, true)
		delay = time.Duration(r.rng.Int64N(int64(time.Since(start))))
	}
	res := r.appendFiles(i, "x", r.env(point), delay, true)
	if point != "" && !res.killed {
		r.t.Errorf("append trial %d (%s): not killed: %v\n%s", i, point, res.err, res.output)
	}
	if point == "" && res.killed {
		r.stats.phase["append process"]++
	}
	r.check(fmt.Sprintf("append trial %d (%s, killed after %v)", i, point, delay))
}

// appendFiles writes one or two files (small, and big when both) to a
// local dir and appends them with `deltafs append`.
func (r *crashRun) appendFiles(trial int, tag string, env []string, kill time.Duration, both bool) appendRun {
	t := r.t
	dir := t.TempDir()
	var paths, names []string
	n := 1
	if both {
		n = 2
	}
	for j := range n {
		name := fmt.Sprintf("a%03d-%s-%d.parquet", trial, tag, j)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, r.body(name, j == 1), 0o644); err != nil {
			t.Fatal(err)
		}
		paths, names = append(paths, p), append(names, name)
	}
	if env == nil {
		env = r.env("")
	}
	res := runAppend(t, env, kill, r.root, paths...)
	r.groups = append(r.groups, names)
	for _, n := range names {
		if res.err == nil {
			r.acked[n] = true
			r.stats.acked++
		} else {
			r.stats.unacked++
		}
	}
	if res.err != nil && !res.killed {
		t.Errorf("append %v failed without a kill: %v\n%s", names, res.err, res.output)
	}
	return res
}

// finalAppend checks the table still takes an append after the series.
func (r *crashRun) finalAppend() {
	res := r.appendFiles(999, "final", nil, 0, false)
	if res.err != nil || res.version != r.latest+1 {
		r.t.Errorf("final append: version %d, %v; want %d", res.version, res.err, r.latest+1)
	}
	a := auditTable(r.t, r.root)
	a.checkAppends(r.t, r.root, r.sums, r.acked, r.groups)
	checkVersionsBuild(r.t, r.root, 0, a.latest)
}

func (r *crashRun) report(what string) {
	s := r.stats
	r.t.Logf("%s: %d crash trials (%v); writer phase at random kills %v; files acknowledged %d, unacknowledged %d "+
		"(%d of them committed whole, the rest absent); orphan data files %d; partial uploads (*.tmp) %d; staged files left by dead mounts %d, "+
		"staging dirs of dead mounts removed at restart %d; temp files in _delta_log %d; files left in TMPDIR %d; versions now %d",
		what, s.trials, s.byPoint, s.phase, s.acked, s.unacked, s.landed, s.orphans, s.partial, s.stagedLeft, s.stagingDirsGone,
		s.logTmps, s.uploadTmps, r.latest)
}

// bigParquet encodes 256Ki rows of random numbers (~4 MiB): big enough
// that staging and upload take a while for random kills to hit.
func bigParquet(t *testing.T, rng *rand.Rand) []byte {
	rows := make([]basicRow, 256<<10)
	for i := range rows {
		n, f := rng.Int64(), rng.Float64()
		rows[i] = basicRow{Number: &n, Float: &f}
	}
	return parquetBytes(t, rows)
}

func sha256Sum(data []byte) [32]byte { return sha256.Sum256(data) }

// A release build has no crash points: DELTAFS_CRASHPOINT in its
// environment changes nothing, and the append commits.
func TestReleaseBuildHasNoCrashPoints(t *testing.T) {
	bin := buildDeltafs(t)
	root := testenv.CopyFixture(t, fixtureAppend)
	file := filepath.Join(t.TempDir(), "rows.parquet")
	if err := os.WriteFile(file, parquetBytes(t, []basicRow{{ptr("r"), ptr[int64](1), nil}}), 0o644); err != nil {
		t.Fatal(err)
	}
	before := latestSnapshot(t, root).Version()
	cmd := exec.Command(bin, "append", root, file)
	cmd.Env = append(os.Environ(), writeback.EnvCrashPoint+"="+writeback.CrashStaged)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("append with %s=%s in a release build: %v\n%s", writeback.EnvCrashPoint, writeback.CrashStaged, err, out)
	}
	if v := latestSnapshot(t, root).Version(); v != before+1 {
		t.Fatalf("latest version %d after the append, want %d", v, before+1)
	}
}
