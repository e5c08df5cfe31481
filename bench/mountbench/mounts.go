//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/mount"
)

// A config is one way of serving files: native (no mount), a deltafs
// mount (passthrough or userspace), or go-fuse's loopback.
type config string

const (
	native        config = "native"
	deltaPT       config = "deltafs-passthrough"
	deltaUser     config = "deltafs-userspace"
	loopback      config = "loopback"
	loopbackTuned config = "loopback-tuned"
)

// mounted is a mounted config. dir returns the directory holding the
// table's data files at a version: the table root for native, the mount
// root for the loopbacks (which mirror the table root), @vN for deltafs.
type mounted struct {
	dir     func(version int64) string
	unmount func() error
}

// mountConfig mounts cfg, serving the table at root, at a fresh directory
// under work. cacheDir is the deltafs disk cache (a fresh one makes
// deltafs materialize DV'd files again).
func mountConfig(cfg config, work, root, cacheDir string) (*mounted, error) {
	if cfg == native {
		return &mounted{dir: func(int64) string { return root }, unmount: func() error { return nil }}, nil
	}
	mnt, err := os.MkdirTemp(work, "mnt-")
	if err != nil {
		return nil, err
	}
	switch cfg {
	case deltaPT, deltaUser:
		srv, err := mount.Mount(context.Background(), mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, Mountpoint: mnt,
			CacheDir: cacheDir, NoPassthrough: cfg == deltaUser, Logger: warnLogger})
		if err != nil {
			return nil, fmt.Errorf("mount %s: %w", cfg, err)
		}
		dir := func(v int64) string { return filepath.Join(mnt, "t", fmt.Sprintf("@v%d", v)) }
		return &mounted{dir: dir, unmount: func() error { return unmountAndRemove(srv.Unmount, mnt) }}, nil
	default:
		srv, err := mountLoopback(root, mnt, cfg == loopbackTuned)
		if err != nil {
			return nil, fmt.Errorf("mount %s: %w", cfg, err)
		}
		return &mounted{dir: func(int64) string { return mnt }, unmount: func() error { return unmountAndRemove(srv.Unmount, mnt) }}, nil
	}
}

// unmountAndRemove unmounts and removes the mountpoint.
func unmountAndRemove(unmount func() error, mnt string) error {
	if err := unmount(); err != nil {
		return err
	}
	return os.Remove(mnt)
}

var warnLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// mountLoopback mounts go-fuse's loopback of root at mnt with passthrough
// off. Tuned, it gets what the deltafs mount uses: 1 MiB requests with
// the bdi read-ahead raised to 1 MiB, no splice, xattrs off, 60 s
// timeouts, FOPEN_KEEP_CACHE on files and FOPEN_CACHE_DIR on directories.
// Untuned, it has go-fuse's defaults.
func mountLoopback(root, mnt string, tuned bool) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(root, &st); err != nil {
		return nil, err
	}
	lr := &gofs.LoopbackRoot{Path: root, Dev: uint64(st.Dev)}
	//lint:ignore SA1019 the loopback baseline is go-fuse's own LoopbackRoot, configured as its docs show
	lr.NewNode = func(rd *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
		return &benchLoopNode{LoopbackNode: gofs.LoopbackNode{RootData: rd}, tuned: tuned}
	}
	lr.RootNode = lr.NewNode(lr, nil, "", &st) //lint:ignore SA1019 see above
	opts := &gofs.Options{MountOptions: fuse.MountOptions{FsName: "loopback", DirectMount: true}}
	if tuned {
		long := 60 * time.Second
		opts.EntryTimeout, opts.AttrTimeout = &long, &long
		opts.MaxWrite, opts.MaxReadAhead = 1<<20, 1<<20
		opts.DisableSplice, opts.DisableXAttrs = true, true
	}
	srv, err := gofs.Mount(mnt, lr.RootNode, opts)
	if err != nil {
		return nil, err
	}
	if tuned {
		raiseReadAhead(mnt)
	}
	return srv, nil
}

// raiseReadAhead sets the FUSE bdi read-ahead of the mount at mnt to
// 1 MiB, as deltafs does for itself.
func raiseReadAhead(mnt string) {
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		return
	}
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	if err := os.WriteFile(p, []byte("1024"), 0); err != nil {
		fmt.Fprintf(os.Stderr, "mountbench: cannot raise loopback read-ahead: %v\n", err)
	}
}

// benchLoopNode is go-fuse's LoopbackNode with passthrough off and, when
// tuned, the kernel caching flags deltafs uses.
type benchLoopNode struct {
	gofs.LoopbackNode
	tuned bool
}

var (
	_ = (gofs.NodeOpener)((*benchLoopNode)(nil))
	_ = (gofs.NodeOpendirHandler)((*benchLoopNode)(nil))
)

// Open opens the file without offering it to kernel passthrough.
func (n *benchLoopNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		return fh, fl, 0
	}
	if n.tuned {
		fl |= fuse.FOPEN_KEEP_CACHE
	}
	return &noPassthroughFile{lf}, fl, 0
}

// OpendirHandle lets the kernel cache listings when tuned.
func (n *benchLoopNode) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if n.tuned && errno == 0 {
		fl |= fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	return fh, fl, errno
}

// noPassthroughFile is a loopback file whose PassthroughFd declines, so
// every read goes through the server.
type noPassthroughFile struct{ *gofs.LoopbackFile }

// PassthroughFd declines passthrough.
func (noPassthroughFile) PassthroughFd() (int, bool) { return 0, false }

// dropCaches empties the kernel page, dentry and inode caches (root), or
// at least evicts files from the page cache with POSIX_FADV_DONTNEED.
func dropCaches(files ...string) {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err == nil {
		return
	}
	for _, p := range files {
		if f, err := os.Open(p); err == nil {
			unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
			f.Close()
		}
	}
}
