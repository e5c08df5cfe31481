//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The in-process figures of dvSection share one process across mounts: its
// heap, grown by the earlier trials, hands the rewrite memory that is
// already faulted in. A user's first read after starting a mount (or after
// the runtime gave idle memory back) pays for new memory too. dvFreshRead
// times that read through a mount run by the deltafs binary, a process of
// its own for each read.

// deltafsBinary returns the deltafs binary the fresh-process figures mount
// with (DELTAFS_BENCH_DELTAFS; bench/mount.sh builds bin/deltafs), or "".
func deltafsBinary() string {
	p := os.Getenv("DELTAFS_BENCH_DELTAFS")
	if p == "" {
		return ""
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// dvFreshRead mounts t with bin in a new process and an empty cache dir,
// lists @vN (loading the snapshot, as a reader's glob would), drops caches
// or reads the backing file as cached says, and times stat + read of the
// file, checking its rows.
func dvFreshRead(bin string, t *dvTable, work string, v int64, cached bool) (statRead [2]time.Duration, err error) {
	table, stop, err := freshMount(bin, t.root, work)
	if err != nil {
		return statRead, err
	}
	defer func() {
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	snap := filepath.Join(table, fmt.Sprintf("@v%d", v))
	if _, err := os.ReadDir(snap); err != nil {
		return statRead, err
	}
	return timeFirstRead(t, snap, v, cached)
}

// seqFreshRead mounts the table at root with bin in a new process and an
// empty cache dir, drops caches or reads the backing file as cached says,
// and times the first read of name (size bytes) in @v0: what a user's
// first read after starting a mount costs, its lookups (the snapshot
// loaded at the first) and its open included.
func seqFreshRead(bin, work, root, name string, size int64, cached bool) (d time.Duration, err error) {
	table, stop, err := freshMount(bin, root, work)
	if err != nil {
		return 0, err
	}
	defer func() {
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	backing := filepath.Join(root, name)
	if cached {
		if _, err := readFile(backing, size); err != nil {
			return 0, err
		}
	} else {
		dropCaches(backing)
	}
	return readFile(filepath.Join(table, "@v0", name), size)
}

// freshMount mounts the table at root with bin, a process of its own, on
// a new directory under work with an empty cache dir, and returns the
// table's directory in the mount once it is there, and what unmounts it
// and removes the directories.
func freshMount(bin, root, work string) (table string, stop func() error, err error) {
	dir, err := os.MkdirTemp(work, "fresh-")
	if err != nil {
		return "", nil, err
	}
	mnt, cacheDir := filepath.Join(dir, "mnt"), filepath.Join(dir, "cache")
	for _, d := range []string{mnt, cacheDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
	}
	cmd := exec.Command(bin, "mount", "--cache-dir", cacheDir, root, mnt)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() error {
		defer os.RemoveAll(dir)
		uerr := exec.Command("fusermount3", "-u", mnt).Run()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
		if uerr != nil {
			return fmt.Errorf("unmount %s: %w", mnt, uerr)
		}
		return nil
	}
	table = filepath.Join(mnt, filepath.Base(root))
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(table); err == nil {
			return table, stop, nil
		}
		select {
		case err := <-exited:
			exited <- err
			stop()
			return "", nil, fmt.Errorf("%s mount exited: %v", bin, err)
		default:
		}
		if time.Since(start) > 30*time.Second {
			stop()
			return "", nil, fmt.Errorf("%s mount: %s not there after 30 s", bin, table)
		}
	}
}
