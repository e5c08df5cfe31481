package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/mount"
)

// nfsLoopback is the address 'deltafs mount --nfs' serves on.
const nfsLoopback = "127.0.0.1"

// nfsMountCommand returns the command that mounts the export of a server
// on nfsLoopback:port at mountpoint, with the OS's NFS client: NFSv3 over
// TCP, MOUNT on the same port, no lock manager (the server has none), and
// attributes cached for a second (@latest and the inboxes move; a
// snapshot's files are checked once a second, at a GETATTR's cost).
func nfsMountCommand(goos string, port int, mountpoint string) []string {
	opts := fmt.Sprintf("vers=3,tcp,port=%d,mountport=%d,actimeo=1", port, port)
	src := nfsLoopback + ":/"
	if goos == "darwin" {
		// locallocks: flock and fcntl locks stay on this machine instead of
		// failing (no lockd); noresvport: the server needs no privileged port.
		return []string{"mount_nfs", "-o", opts + ",nolocks,locallocks,noresvport", src, mountpoint}
	}
	return []string{"mount", "-t", "nfs", "-o", opts + ",nolock", src, mountpoint}
}

// nfsUnmountCommand returns the command that unmounts an NFS mount.
func nfsUnmountCommand(goos, mountpoint string, lazy bool) []string {
	switch {
	case lazy && goos == "darwin":
		return []string{"umount", "-f", mountpoint}
	case lazy:
		return []string{"umount", "-l", mountpoint}
	}
	return []string{"umount", mountpoint}
}

// runUnmountCommand runs an unmount command, its output in the error.
func runUnmountCommand(cmd []string) error {
	out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(cmd, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// serveNFSMount serves cfg's tables over NFS on a free loopback port,
// mounts them at cfg.Mountpoint with the OS's NFS client, and serves until
// ctx ends (a signal: then it unmounts) or the mount is gone ('deltafs
// unmount', umount); the server stops then.
func serveNFSMount(ctx context.Context, cfg mount.Config, f *mountFlags) error {
	out, closeLog, err := openLog(f.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	cfg.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: levelOf(f.logLevel)}))
	l, err := net.Listen("tcp", nfsLoopback+":0")
	if err != nil {
		return err
	}
	srv, err := mount.ServeNFS(ctx, cfg, &allowListener{Listener: l, nets: loopbackNets(), log: cfg.Logger})
	if err != nil {
		l.Close()
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	cmd := nfsMountCommand(runtime.GOOS, port, cfg.Mountpoint)
	cfg.Logger.Info("deltafs: mounting over NFS", "command", strings.Join(cmd, " "))
	if b, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
		srv.Unmount()
		return fmt.Errorf("mount %s over NFS: %s: %v: %s", cfg.Mountpoint, strings.Join(cmd, " "), err, strings.TrimSpace(string(b)))
	}
	fmt.Fprintf(out, "%s (over NFS, port %d)\n", mountedLine(cfg.Mountpoint, len(srv.Tables()), srv.Refused()), port)
	mounted := mountDev(cfg.Mountpoint)
	for tick := time.NewTicker(time.Second); ; {
		select {
		case <-ctx.Done():
			tick.Stop()
			if err := runUnmountCommand(nfsUnmountCommand(runtime.GOOS, cfg.Mountpoint, false)); err != nil {
				fmt.Fprintf(out, "deltafs: unmount %s: %v; detaching\n", cfg.Mountpoint, err)
				runUnmountCommand(nfsUnmountCommand(runtime.GOOS, cfg.Mountpoint, true))
			}
			srv.Unmount()
			fmt.Fprintf(out, "deltafs: unmounted %s\n", cfg.Mountpoint)
			return nil
		case <-tick.C:
			if mountDev(cfg.Mountpoint) != mounted { // unmounted by someone else
				tick.Stop()
				srv.Unmount()
				fmt.Fprintf(out, "deltafs: unmounted %s\n", cfg.Mountpoint)
				return nil
			}
		}
	}
}

// mountDev is the device of dir: it changes when a mount on dir goes.
func mountDev(dir string) uint64 {
	st, err := os.Stat(filepath.Clean(dir))
	if err != nil {
		return 0
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev)
	}
	return 0
}
