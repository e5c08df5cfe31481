//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
	"github.com/deltafs/deltafs/mount"
)

// The memory a big listing costs the NFS server against the FUSE mount
// (READDIRPLUS of a table of 100,000 versions and of a
// 100,000-file snapshot in bounded memory). Both run in this process over
// the same tree: the FUSE side is `ls -l` (the kernel's READDIRPLUS and
// LOOKUPs), the NFS side the user-space client's READDIRPLUS replies of
// 1 MiB. The figure is the live heap (after a GC) above what it was
// before the listing, at its peak (sampled every 100 ms) and once it is
// done; the kernel keeps what it looked up on the FUSE side, the NFS
// server its path cache (32,768 lookups).

// heapSampler samples the live heap until stopped.
type heapSampler struct {
	base, peak uint64
	stop       chan struct{}
	done       sync.WaitGroup
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{base: liveHeap(), stop: make(chan struct{})}
	h.peak = h.base
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
				h.peak = max(h.peak, liveHeap())
			}
		}
	}()
	return h
}

// end stops sampling and returns the peak and final growth in MiB.
func (h *heapSampler) end() (peak, after float64) {
	close(h.stop)
	h.done.Wait()
	a := liveHeap()
	h.peak = max(h.peak, a)
	mib := func(v uint64) float64 { return float64(int64(v)-int64(h.base)) / (1 << 20) }
	return mib(h.peak), mib(a)
}

func benchNFSMem(o options) ([]section, error) {
	n := envInt("DELTAFS_BENCH_MEM_ENTRIES", 100_000)
	versions, done := generated(o, fmt.Sprintf("versions-%d", n))
	if !done {
		if _, err := scalegen.Generate(scalegen.Spec{Dir: versions, Commits: n, FilesPerCommit: 1, CheckpointEvery: 10_000}); err != nil {
			return nil, err
		}
	}
	files, done := generated(o, fmt.Sprintf("many-%d-v2", n))
	if !done {
		if _, err := writeManyTable(files, n); err != nil {
			return nil, err
		}
	}
	s := section{NoteHeader: "note", Title: fmt.Sprintf("live heap grown by one listing with attributes of %d entries, FUSE (ls -l) and NFS (READDIRPLUS of 1 MiB), MiB", n),
		Ratio: "NFS / FUSE (lower is better)"}
	for _, c := range []struct {
		name, root, dir string
	}{
		{fmt.Sprintf("table of %d versions", n), versions, "t"},
		{fmt.Sprintf("snapshot of %d files", n), files, "t/@v0"},
	} {
		fusePeak, fuseAfter, err := fuseListingHeap(o, c.root, c.dir)
		if err != nil {
			return nil, err
		}
		nfsPeak, nfsAfter, err := nfsListingHeap(o, c.root, c.dir, n)
		if err != nil {
			return nil, err
		}
		for _, f := range []struct {
			what      string
			fuse, nfs float64
		}{{"peak", fusePeak, nfsPeak}, {"after", fuseAfter, nfsAfter}} {
			name := c.name + ", " + f.what
			s.Rows = append(s.Rows,
				row{Figure: name, Config: string(deltaUser), Value: fmt.Sprintf("%.1f MiB", f.fuse), Ratio: 1},
				row{Figure: name, Config: "nfs", Value: fmt.Sprintf("%.1f MiB", f.nfs), Ratio: f.nfs / max(f.fuse, 0.1), Target: noTarget})
		}
	}
	return []section{s}, nil
}

// fuseListingHeap mounts root and measures the heap an ls -l of dir takes.
func fuseListingHeap(o options, root, dir string) (peak, after float64, err error) {
	mnt, err := os.MkdirTemp(o.work, "mnt-")
	if err != nil {
		return 0, 0, err
	}
	cache, err := os.MkdirTemp(o.work, "cache-mem-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(cache)
	srv, err := mount.Mount(context.Background(), mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, Mountpoint: mnt,
		CacheDir: cache, ReadOnly: true, Logger: warnLogger})
	if err != nil {
		return 0, 0, err
	}
	defer unmountAndRemove(srv.Unmount, mnt)
	h := startHeapSampler()
	out, err := exec.Command("ls", "-l", filepath.Join(mnt, dir)).CombinedOutput()
	peak, after = h.end()
	if err != nil {
		return 0, 0, fmt.Errorf("ls -l: %v: %s", err, out)
	}
	return peak, after, nil
}

// nfsListingHeap serves root over NFS and measures the heap a
// READDIRPLUS listing of dir takes.
func nfsListingHeap(o options, root, dir string, n int) (peak, after float64, err error) {
	s, err := serveNFSTable(o.work, root)
	if err != nil {
		return 0, 0, err
	}
	defer s.stop()
	h := startHeapSampler()
	got, err := readDirPlusNFS(s.v, dir)
	peak, after = h.end()
	if err == nil && got < n {
		err = fmt.Errorf("READDIRPLUS of %s listed %d entries, want %d", dir, got, n)
	}
	return peak, after, err
}
