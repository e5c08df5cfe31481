package integration

// The work of the load test (load_test.go): the files readers pick from,
// the readers checking every byte they read, and the inbox appender.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// loadTarget is one file of one @vN directory and where its true bytes are.
type loadTarget struct {
	path string // in the mount
	size int64
	src  string // the table file holding the same bytes; "" when ref holds them
	ref  []byte // bytes read through the mount at first sight (files with a deletion vector)
}

// expected opens the true bytes of tg.
func (tg loadTarget) expected() (io.ReaderAt, func(), error) {
	if tg.src == "" {
		return bytes.NewReader(tg.ref), func() {}, nil
	}
	f, err := os.Open(tg.src)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// targetSet is the files readers pick from; it grows with each append.
type targetSet struct {
	mu    sync.RWMutex
	small []loadTarget      // guarded by mu: files under 64 KiB (the fixture's)
	big   []loadTarget      // guarded by mu: generated files
	refs  map[string][]byte // guarded by mu: reference bytes by table, key and DV
}

func (s *targetSet) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.small) + len(s.big)
}

// pick returns a random target: half the time a big one.
func (s *targetSet) pick(rng *rand.Rand) loadTarget {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.big) > 0 && (rng.IntN(2) == 0 || len(s.small) == 0) {
		return s.big[rng.IntN(len(s.big))]
	}
	return s.small[rng.IntN(len(s.small))]
}

// addTable adds the files of every version of tb and records its latest
// version in tb.before.
func (s *targetSet) addTable(ctx context.Context, mnt string, tb *loadTable) error {
	latest, err := tb.engine.Latest(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", tb.name, err)
	}
	tb.before = latest.Version()
	for v := int64(0); v <= latest.Version(); v++ {
		if err := s.addVersion(ctx, mnt, tb, v); err != nil {
			return err
		}
	}
	return nil
}

// addVersion adds the live files of version v of tb.
func (s *targetSet) addVersion(ctx context.Context, mnt string, tb *loadTable, v int64) error {
	snap, err := tb.engine.Snapshot(ctx, v)
	if err != nil {
		return fmt.Errorf("%s version %d: %w", tb.name, v, err)
	}
	files, err := snap.LiveFiles()
	if err != nil {
		return fmt.Errorf("%s version %d: %w", tb.name, v, err)
	}
	for _, f := range files {
		rel := filepath.Base(f.Key)
		for _, c := range slices.Backward(snap.Metadata().PartitionColumns) {
			rel = filepath.Join(delta.HivePathSegment(c, f.PartitionValues[c]), rel)
		}
		tg, err := s.target(filepath.Join(mnt, tb.name, fmt.Sprintf("@v%d", v), rel), tb, f)
		if err != nil {
			return err
		}
		s.mu.Lock()
		if tg.size < 64<<10 {
			s.small = append(s.small, tg)
		} else {
			s.big = append(s.big, tg)
		}
		s.mu.Unlock()
	}
	return nil
}

// target returns the target of f at path. A file with a deletion vector
// is read through the mount the first time its (table, key, DV) is seen,
// and that read is the reference of every later read of it.
func (s *targetSet) target(path string, tb *loadTable, f delta.LiveFile) (loadTarget, error) {
	if f.Add.DeletionVector == nil {
		return loadTarget{path: path, size: f.Add.Size, src: filepath.Join(tb.dir, filepath.FromSlash(f.Key))}, nil
	}
	id := tb.name + "\x00" + f.Key + "\x00" + f.Add.DeletionVector.UniqueID()
	s.mu.RLock()
	ref, ok := s.refs[id]
	s.mu.RUnlock()
	if !ok {
		var err error
		if ref, err = os.ReadFile(path); err != nil {
			return loadTarget{}, fmt.Errorf("reference read: %w", err)
		}
		if !bytes.HasPrefix(ref, []byte("PAR1")) || !bytes.HasSuffix(ref, []byte("PAR1")) {
			return loadTarget{}, fmt.Errorf("reference read of %s: %d bytes, not a Parquet file", path, len(ref))
		}
		s.mu.Lock()
		s.refs[id] = ref
		s.mu.Unlock()
	}
	return loadTarget{path: path, size: int64(len(ref)), ref: ref}, nil
}

// loadRun is the read load and the appends of one run, with its counters.
type loadRun struct {
	mnt     string
	plan    loadPlan
	targets *targetSet

	opens, reads, bytes atomic.Int64
}

func newLoadRun(mnt string, plan loadPlan) *loadRun {
	return &loadRun{mnt: mnt, plan: plan, targets: &targetSet{refs: map[string][]byte{}}}
}

// run runs the readers and the appender for the plan's duration; it
// returns the first error, which stops them all.
func (r *loadRun) run(tables []*loadTable) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.plan.duration)
	defer cancel()
	errc := make(chan error, r.plan.readers+1)
	var wg sync.WaitGroup
	for i := range r.plan.readers {
		wg.Go(func() { errc <- r.reader(ctx, uint64(i)) })
	}
	wg.Go(func() { errc <- r.appender(ctx, tables) })
	go func() { wg.Wait(); close(errc) }()
	var first error
	for err := range errc {
		if err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// reader reads random targets until ctx ends: half the time a few random
// ranges, half the time the whole file in order.
func (r *loadRun) reader(ctx context.Context, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0x7ead))
	got, exp := make([]byte, 1<<20), make([]byte, 1<<20)
	for ctx.Err() == nil {
		tg := r.targets.pick(rng)
		f, err := os.Open(tg.path)
		if err != nil {
			return err
		}
		r.opens.Add(1)
		if rng.IntN(2) == 0 {
			err = r.randomReads(f, tg, rng, got, exp)
		} else {
			err = r.wholeRead(f, tg, got, exp)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// randomReads checks 1 to 8 reads of random ranges of f (some reaching
// or starting at the end of the file).
func (r *loadRun) randomReads(f *os.File, tg loadTarget, rng *rand.Rand, got, exp []byte) error {
	want, done, err := tg.expected()
	if err != nil {
		return err
	}
	defer done()
	for range 1 + rng.IntN(8) {
		off, n := rng.Int64N(tg.size+1), 1+rng.IntN(loadReadMax)
		m, err := f.ReadAt(got[:n], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %d bytes at %d: %w", n, off, err)
		}
		if wantN := min(int64(n), tg.size-off); int64(m) != wantN {
			return fmt.Errorf("%s: read %d bytes at %d of %d returned %d", tg.path, n, off, tg.size, m)
		}
		if err := r.compare(want, tg, got[:m], exp[:m], off); err != nil {
			return err
		}
	}
	return nil
}

// wholeRead reads f from start to end in 1 MiB reads and checks every
// byte and the total.
func (r *loadRun) wholeRead(f *os.File, tg loadTarget, got, exp []byte) error {
	want, done, err := tg.expected()
	if err != nil {
		return err
	}
	defer done()
	var off int64
	for {
		n, err := io.ReadFull(f, got)
		if cerr := r.compare(want, tg, got[:n], exp[:n], off); cerr != nil {
			return cerr
		}
		off += int64(n)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: read at %d: %w", tg.path, off, err)
		}
	}
	if off != tg.size {
		return fmt.Errorf("%s: read %d bytes to the end, want %d", tg.path, off, tg.size)
	}
	return nil
}

// compare checks got, read from tg at off, against the true bytes (read
// into exp) and counts the read.
func (r *loadRun) compare(want io.ReaderAt, tg loadTarget, got, exp []byte, off int64) error {
	if m, err := want.ReadAt(exp, off); m != len(exp) {
		return fmt.Errorf("reference of %s: %d bytes at %d: %v", tg.path, m, off, err)
	}
	if !bytes.Equal(got, exp) {
		return fmt.Errorf("%s: %d bytes at %d differ from %s", tg.path, len(got), off, cmp.Or(tg.src, "the reference read"))
	}
	r.reads.Add(1)
	r.bytes.Add(int64(len(got)))
	return nil
}

// appender drops a generated file into an inbox every second, the tables
// in turn, until ctx ends; each acknowledged append's version becomes
// targets of the readers.
func (r *loadRun) appender(ctx context.Context, tables []*loadTable) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		tb := tables[i%len(tables)]
		if err := r.appendOne(ctx, tb, i); err != nil {
			return fmt.Errorf("append %d to %s: %w", i, tb.name, err)
		}
	}
}

// appendOne writes file i into tb's inbox (partition part=i%10) and adds
// the version it made to the targets.
func (r *loadRun) appendOne(ctx context.Context, tb *loadTable, i int) error {
	dir := filepath.Join(r.mnt, tb.name, "inbox", fmt.Sprintf("part=%d", i%10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := encodeRows(genRows(uint64(1000+i), r.plan.appendBytes))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("load-%d.parquet", i)), data, 0o644); err != nil {
		return err
	}
	tb.appended.Add(1)
	link, err := os.Readlink(filepath.Join(r.mnt, tb.name, "@latest"))
	if err != nil {
		return err
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(link, "@v"), 10, 64)
	if err != nil {
		return fmt.Errorf("@latest -> %q: %w", link, err)
	}
	// The load may end meanwhile: the version is listed all the same.
	return r.targets.addVersion(context.WithoutCancel(ctx), r.mnt, tb, v)
}
