//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
)

// readFile reads the file at p sequentially with 1 MiB reads, as `cat` or
// `dd bs=1M` would, and returns how long open-to-close took. want >= 0 is
// the size the file must have.
func readFile(p string, want int64) (time.Duration, error) {
	buf := make([]byte, 1<<20)
	start := time.Now()
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("read %s: %w", p, err)
		}
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	d := time.Since(start)
	if want >= 0 && n != want {
		return 0, fmt.Errorf("read %s: %d bytes, want %d", p, n, want)
	}
	return d, nil
}

// Sequential read figures, in the order seqTrial returns them.
const (
	coldFirst = iota
	coldSecond
	cachedFirst
	cachedSecond
	nSeqFigures
)

var seqFigureNames = [nSeqFigures]string{"cold, 1st read", "cold, 2nd read", "backing cached, 1st read", "backing cached, 2nd read"}

// seqTrial measures the four sequential read figures of one config: a
// fresh mount after dropping every cache, read twice; then a fresh mount
// with the backing file in the page cache, read twice.
func seqTrial(cfg config, work, root, name string, size int64) ([nSeqFigures]time.Duration, error) {
	var d [nSeqFigures]time.Duration
	backing := filepath.Join(root, name)
	for _, cached := range []bool{false, true} {
		m, err := mountConfig(cfg, work, root, filepath.Join(work, "cache-seq"))
		if err != nil {
			return d, err
		}
		first := coldFirst
		if cached {
			first = cachedFirst
			_, err = readFile(backing, size)
		} else {
			dropCaches(backing)
		}
		p := filepath.Join(m.dir(0), name)
		for i := 0; i < 2 && err == nil; i++ {
			d[first+i], err = readFile(p, size)
		}
		if uerr := m.unmount(); err == nil {
			err = uerr
		}
		if err != nil {
			return d, fmt.Errorf("%s: %w", cfg, err)
		}
	}
	return d, nil
}

// dvFirstRead times the first stat and read of the file of the DV table at
// version v through a fresh deltafs mount with an empty disk cache (the
// lookup materializes a DV'd file), the backing file cached or not. It
// checks the served file holds the live rows.
func dvFirstRead(t *dvTable, work string, v int64, cached bool) (statRead [2]time.Duration, err error) {
	cacheDir, err := os.MkdirTemp(work, "cache-dv-")
	if err != nil {
		return statRead, err
	}
	defer os.RemoveAll(cacheDir)
	m, err := mountConfig(deltaPT, work, t.root, cacheDir)
	if err != nil {
		return statRead, err
	}
	statRead, err = timeFirstRead(t, m.dir(v), v, cached)
	if uerr := m.unmount(); err == nil {
		err = uerr
	}
	return statRead, err
}

// timeFirstRead drops the page cache, or reads the backing file into it,
// as cached says, then times the stat (the lookup materializes a DV'd
// file) and the read of the file in the snapshot directory dir, and checks
// its rows.
func timeFirstRead(t *dvTable, dir string, v int64, cached bool) (statRead [2]time.Duration, err error) {
	backing := filepath.Join(t.root, t.name)
	if cached {
		_, err = readFile(backing, t.size)
	} else {
		dropCaches(backing)
	}
	p := filepath.Join(dir, t.name)
	if err == nil {
		start := time.Now()
		_, err = os.Stat(p)
		statRead[0] = time.Since(start)
	}
	if err == nil {
		statRead[1], err = readFile(p, -1)
	}
	if err == nil {
		err = checkRows(p, t.rows-t.deleted[v])
	}
	return statRead, err
}

// dvLaterMountRead is dvFirstRead on a second mount with the first one's
// cache dir: the first mount reads the file twice and waits for its
// materialized copy, the second is timed (stat + read), the backing file
// and the copy cached or dropped as cached says.
func dvLaterMountRead(t *dvTable, work string, v int64, cached bool) (statRead [2]time.Duration, err error) {
	cacheDir, err := os.MkdirTemp(work, "cache-later-")
	if err != nil {
		return statRead, err
	}
	defer os.RemoveAll(cacheDir)
	m, err := mountConfig(deltaPT, work, t.root, cacheDir)
	if err != nil {
		return statRead, err
	}
	p := filepath.Join(m.dir(v), t.name)
	fi, err := os.Stat(p)
	for i := 0; err == nil && i < 2; i++ {
		_, err = readFile(p, fi.Size())
	}
	// The copy and then its 16-byte sum (written after it) on disk: a copy
	// whose sum was not written when the mount closed is discarded.
	for start := time.Now(); err == nil && !(hasFileOfSize(cacheDir, fi.Size()) && hasFileOfSize(cacheDir, 16)); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			err = fmt.Errorf("no materialized copy a minute after the second open")
		}
	}
	if uerr := m.unmount(); err == nil {
		err = uerr
	}
	if err != nil {
		return statRead, err
	}
	m, err = mountConfig(deltaPT, work, t.root, cacheDir)
	if err != nil {
		return statRead, err
	}
	defer m.unmount()
	p = filepath.Join(m.dir(v), t.name)
	if cached {
		_, err = readFile(filepath.Join(t.root, t.name), t.size)
	} else {
		dropCaches(filepath.Join(t.root, t.name))
	}
	if err != nil {
		return statRead, err
	}
	start := time.Now()
	if _, err = os.Stat(p); err != nil {
		return statRead, err
	}
	statRead[0] = time.Since(start)
	if statRead[1], err = readFile(p, -1); err != nil {
		return statRead, err
	}
	return statRead, checkRows(p, t.rows-t.deleted[v])
}

// rereads are dvReread's figures.
type rereads struct {
	size      int64         // served bytes
	composite time.Duration // the second read, served as a composite
	copied    time.Duration // median re-read once the copy is built (v0: of the stored file)
	built     time.Duration // from the second open until the copy was on disk
	// appended: median re-read of the same file through the version after
	// an unrelated append (v2 only; zero otherwise).
	appended time.Duration
}

// dvReread reads the file of the DV table at version v through a fresh
// mount twice (the second open schedules its materialized copy), waits
// for the copy to appear in the disk cache (a file of exactly the served
// size), and times re-reads from it. The plain file (v0) has no copy: its
// re-reads are of the stored file through passthrough.
func dvReread(t *dvTable, work string, v int64) (rereads, error) {
	var r rereads
	cacheDir, err := os.MkdirTemp(work, "cache-reread-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(cacheDir)
	m, err := mountConfig(deltaPT, work, t.root, cacheDir)
	if err != nil {
		return r, err
	}
	defer m.unmount()
	p := filepath.Join(m.dir(v), t.name)
	fi, err := os.Stat(p)
	if err != nil {
		return r, err
	}
	r.size = fi.Size()
	if _, err := readFile(p, r.size); err != nil {
		return r, err
	}
	opened := time.Now()
	if r.composite, err = readFile(p, r.size); err != nil {
		return r, err
	}
	if v > 0 {
		// The copy and then its 16-byte sum, written after it: an open
		// between the two is still served by the composite.
		for !hasFileOfSize(cacheDir, r.size) || !hasFileOfSize(cacheDir, 16) {
			if time.Since(opened) > time.Minute {
				return r, fmt.Errorf("no materialized copy a minute after the second open")
			}
			time.Sleep(5 * time.Millisecond)
		}
		r.built = time.Since(opened)
	}
	var ds []time.Duration
	for range 5 {
		d, err := readFile(p, r.size)
		if err != nil {
			return r, err
		}
		ds = append(ds, d)
	}
	r.copied = median(ds[1:])
	if err := checkRows(p, t.rows-t.deleted[v]); err != nil || v != 2 {
		return r, err
	}
	// An unrelated append (v3 adds another file): the same file through
	// @v3 is the same inode, its copy the same, so it stays warm.
	other := "part-00001-unrelated.parquet"
	if err := os.Link(filepath.Join(t.root, t.name), filepath.Join(t.root, other)); err != nil && !os.IsExist(err) {
		return r, err
	}
	defer os.Remove(filepath.Join(t.root, other))
	defer os.Remove(filepath.Join(t.root, "_delta_log", fmt.Sprintf("%020d.json", 3)))
	if err := writeCommit(t.root, 3, addAction(other, t.size, nil)); err != nil {
		return r, err
	}
	p3 := filepath.Join(m.dir(3), t.name)
	ds = ds[:0]
	for range 5 {
		d, err := readFile(p3, r.size)
		if err != nil {
			return r, err
		}
		ds = append(ds, d)
	}
	r.appended = median(ds[1:])
	return r, checkRows(p3, t.rows-t.deleted[v])
}

// hasFileOfSize reports whether a regular file of exactly size bytes is
// under dir.
func hasFileOfSize(dir string, size int64) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(d.Name(), "tmp") {
			if fi, err := d.Info(); err == nil && fi.Size() == size {
				found = true
			}
		}
		return nil
	})
	return found
}

// lsOnce runs `ls -l dir` and checks it listed at least n entries.
func lsOnce(dir string, n int) (time.Duration, error) {
	var out bytes.Buffer
	cmd := exec.Command("ls", "-l", dir)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdout = &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("ls -l %s: %w", dir, err)
	}
	if lines := bytes.Count(out.Bytes(), []byte("\n")); lines < n {
		return 0, fmt.Errorf("ls -l %s: %d lines, want > %d", dir, lines, n)
	}
	return d, nil
}

// lsWarm mounts cfg, lists once, then times runs listings.
func lsWarm(cfg config, work, root string, n, runs int) ([]time.Duration, error) {
	m, err := mountConfig(cfg, work, root, filepath.Join(work, "cache-ls"))
	if err != nil {
		return nil, err
	}
	defer m.unmount()
	var ds []time.Duration
	for i := 0; i <= runs; i++ {
		d, err := lsOnce(m.dir(0), n)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// lsCold mounts cfg afresh, drops every cache and times one listing.
func lsCold(cfg config, work, root string, n int) (time.Duration, error) {
	m, err := mountConfig(cfg, work, root, filepath.Join(work, "cache-ls"))
	if err != nil {
		return 0, err
	}
	defer m.unmount()
	dropCaches()
	return lsOnce(m.dir(0), n)
}

// openReadClose times n rounds of open + read 1 byte + close of the file
// name in cfg's view of root, after as many warm-up rounds.
func openReadClose(cfg config, work, root, name string, n int) ([]time.Duration, error) {
	m, err := mountConfig(cfg, work, root, filepath.Join(work, "cache-open"))
	if err != nil {
		return nil, err
	}
	defer m.unmount()
	p := filepath.Join(m.dir(0), name)
	var b [1]byte
	ds := make([]time.Duration, 0, n)
	for i := range 2 * n {
		start := time.Now()
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		_, err = f.Read(b[:])
		f.Close()
		d := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		if i >= n {
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// quantile returns the q-quantile (0..1) of ds by nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

// checkRows checks the Parquet file at p holds want rows (from its footer).
func checkRows(p string, want int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, fi.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("open %s as parquet: %w", p, err)
	}
	if got := pf.NumRows(); got != want {
		return fmt.Errorf("%s: %d rows, want %d", p, got, want)
	}
	return nil
}
