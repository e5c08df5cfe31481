//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
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
func seqFreshRead(bin, work, root, name string, size int64, cached bool) (time.Duration, error) {
	table, stop, err := freshMount(bin, root, work)
	if err != nil {
		return 0, err
	}
	return firstRead(filepath.Join(table, "@v0"), stop, root, name, size, cached)
}

// loopbackServe is the argument that makes this binary serve go-fuse's
// loopback of a directory (serveLoopback).
const loopbackServe = "loopback-serve"

// loopbackFreshRead is seqFreshRead through go-fuse's loopback (with
// passthrough) of root's parent, served by this binary in a process of its
// own: what any FUSE server pays for a first read through a fresh process,
// with one lookup fewer than deltafs's @v0/FILE.
func loopbackFreshRead(work, root, name string, size int64, cached bool) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	dir, stop, err := freshProcess(work, func(mnt, _ string) []string {
		return []string{self, loopbackServe, filepath.Dir(root), mnt}
	}, filepath.Base(root))
	if err != nil {
		return 0, err
	}
	return firstRead(dir, stop, root, name, size, cached)
}

// firstRead drops caches or reads the backing file of name as cached says,
// times the read of dir/name, and stops the mount.
func firstRead(dir string, stop func() error, root, name string, size int64, cached bool) (d time.Duration, err error) {
	defer func() {
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	if err := cacheOrDrop(filepath.Join(root, name), size, cached); err != nil {
		return 0, err
	}
	return readFile(filepath.Join(dir, name), size)
}

// cacheOrDrop reads the stored file backing (size bytes) into the page
// cache, or drops it from there, as cached says.
func cacheOrDrop(backing string, size int64, cached bool) error {
	if !cached {
		dropCaches(backing)
		return nil
	}
	_, err := readFile(backing, size)
	return err
}

// freshMount mounts the table at root with bin, a process of its own, on
// a new directory under work with an empty cache dir, and returns the
// table's directory in the mount once it is there, and what unmounts it
// and removes the directories.
func freshMount(bin, root, work string) (table string, stop func() error, err error) {
	return freshProcess(work, func(mnt, cacheDir string) []string {
		return []string{bin, "mount", "--cache-dir", cacheDir, root, mnt}
	}, filepath.Base(root))
}

// freshProcess runs the command argv gives for a new mount directory and
// cache dir under work, and returns the mount's entry named within once it
// is there, and what unmounts it and removes the directories.
func freshProcess(work string, argv func(mnt, cacheDir string) []string, within string) (entry string, stop func() error, err error) {
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
	args := argv(mnt, cacheDir)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	bin := args[0]
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
	entry = filepath.Join(mnt, within)
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(entry); err == nil {
			return entry, stop, nil
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
			return "", nil, fmt.Errorf("%s mount: %s not there after 30 s", bin, entry)
		}
	}
}

// serveLoopback serves go-fuse's loopback of src at mnt until unmounted:
// files passed through to the kernel where it allows (go-fuse's default),
// 1 MiB requests, no splice, as the deltafs mount.
func serveLoopback(src, mnt string) error {
	root, err := gofs.NewLoopbackRoot(src)
	if err != nil {
		return err
	}
	sec := time.Second
	srv, err := gofs.Mount(mnt, root, &gofs.Options{EntryTimeout: &sec, AttrTimeout: &sec, MountOptions: fuse.MountOptions{
		FsName: "loopback", DirectMount: true, MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, DisableSplice: true,
	}})
	if err != nil {
		return err
	}
	srv.Wait()
	return nil
}

// nativeFirstRead times a read of the stored file name, with the page
// cache dropped or holding it as cached says: the base of a fresh
// process's first read, taken just before that process starts.
func nativeFirstRead(root, name string, size int64, cached bool) (time.Duration, error) {
	backing := filepath.Join(root, name)
	if err := cacheOrDrop(backing, size, cached); err != nil {
		return 0, err
	}
	return readFile(backing, size)
}
