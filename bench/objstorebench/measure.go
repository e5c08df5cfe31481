//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/mount"
)

// firstRead is the size of the read timed as the time to first byte.
const firstRead = 4 << 10

var warnLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// mounted is a fresh deltafs mount (fresh disk cache, memory cache and
// page cache) of the table at url as MOUNTPOINT/t.
type mounted struct {
	dir     string // MOUNTPOINT/t
	unmount func() error
}

func mountTable(work, url string) (*mounted, error) {
	mnt, err := os.MkdirTemp(work, "mnt-")
	if err != nil {
		return nil, err
	}
	cache, err := os.MkdirTemp(work, "cache-")
	if err != nil {
		return nil, err
	}
	srv, err := mount.Mount(context.Background(), mount.Config{Sources: []mount.Source{{Name: "t", URL: url}}, Mountpoint: mnt,
		CacheDir: cache, ReadOnly: true, Logger: warnLogger})
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", blobstore.Redact(url), err)
	}
	return &mounted{dir: filepath.Join(mnt, "t"), unmount: func() error {
		if err := srv.Unmount(); err != nil {
			return err
		}
		os.RemoveAll(cache)
		return os.Remove(mnt)
	}}, nil
}

// readTimes is one sequential read: time to the first firstRead bytes
// (from open, or from the GET) and to the last byte.
type readTimes struct{ ttfb, total time.Duration }

// drain reads r to the end, the first Read of firstRead bytes, the others
// of 1 MiB (as `cat` or `dd bs=1M` would), and checks the size.
func drain(r io.Reader, start time.Time, want int64) (readTimes, error) {
	var t readTimes
	buf := make([]byte, 1<<20)
	n, err := io.ReadFull(r, buf[:firstRead])
	t.ttfb = time.Since(start)
	got := int64(n)
	for err == nil {
		n, err = r.Read(buf)
		got += int64(n)
	}
	t.total = time.Since(start)
	if err != io.EOF {
		return t, err
	}
	if got != want {
		return t, fmt.Errorf("read %d bytes, want %d", got, want)
	}
	return t, nil
}

// readFile reads the file at p sequentially from open to close.
func readFile(p string, size int64) (readTimes, error) {
	start := time.Now()
	f, err := os.Open(p)
	if err != nil {
		return readTimes{}, err
	}
	defer f.Close()
	t, err := drain(f, start, size)
	if err != nil {
		return t, fmt.Errorf("read %s: %w", p, err)
	}
	return t, nil
}

// readGET reads key of st with one ranged GET of the whole object through
// gocloud's S3 reader: what a program using the SDK directly would do.
func readGET(st *blobstore.Store, key string, size int64) (readTimes, error) {
	b, prefix := st.Bucket()
	start := time.Now()
	r, err := b.NewRangeReader(context.Background(), prefix+key, 0, size, nil)
	if err != nil {
		return readTimes{}, err
	}
	defer r.Close()
	t, err := drain(r, start, size)
	if err != nil {
		return t, fmt.Errorf("GET %s: %w", key, err)
	}
	return t, nil
}

// findOnce runs `find dir` and checks it printed more than n lines.
func findOnce(dir string, n int) (time.Duration, error) {
	var out bytes.Buffer
	cmd := exec.Command("find", dir)
	cmd.Stdout = &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("find %s: %w", dir, err)
	}
	if lines := bytes.Count(out.Bytes(), []byte("\n")); lines <= n {
		return 0, fmt.Errorf("find %s: %d lines, want > %d", dir, lines, n)
	}
	return d, nil
}

// findWarm runs find once, then times runs more.
func findWarm(dir string, n, runs int) ([]time.Duration, error) {
	var ds []time.Duration
	for i := 0; i <= runs; i++ {
		d, err := findOnce(dir, n)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			ds = append(ds, d)
		}
	}
	return ds, nil
}
