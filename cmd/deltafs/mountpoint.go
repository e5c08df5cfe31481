package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// mountInfo describes the mount holding a path: where it is mounted and
// its type ("fuse.deltafs", "tmpfs", ...). found is false where the
// system does not say (no /proc/self/mountinfo).
type mountInfo struct {
	point, fstype, source string
	found                 bool
}

const deltafsType = "fuse.deltafs"

// checkMountpoint refuses a mountpoint that would fail or surprise:
// missing, not a directory, already a mount point (mounting would hide
// what is there, as fusermount's nonempty rule warned) or inside a deltafs
// mount (a mount stacked in its own snapshots).
func checkMountpoint(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mountpoint %s does not exist (create it with mkdir -p %s)", dir, dir)
	}
	if deadMount(err) {
		return deadMountError(dir, err)
	}
	if err != nil {
		return fmt.Errorf("mountpoint %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	m, err := mountOf(abs)
	if err != nil || !m.found {
		return err
	}
	if m.point == abs {
		if _, err := os.ReadDir(dir); deadMount(err) { // its root's attributes may still be cached
			return deadMountError(dir, err)
		}
		return fmt.Errorf("mountpoint %s is already a mount point (%s): unmount it first, or choose another directory", dir, m.fstype)
	}
	if m.fstype == deltafsType {
		return fmt.Errorf("mountpoint %s is inside the deltafs mount at %s: choose a directory outside it", dir, m.point)
	}
	return nil
}

// deadMount reports whether err is what the kernel answers under a FUSE
// mount whose server is gone: ENOTCONN, or ECONNABORTED on kernels since
// the connection is aborted when the server's /dev/fuse closes.
func deadMount(err error) bool {
	return errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED)
}

// deadMountError says that dir is a dead mount and how to clear it.
func deadMountError(dir string, err error) error {
	return fmt.Errorf("mountpoint %s: %w (a deltafs that died? clear it with deltafs unmount --lazy %s)", dir, err, dir)
}

// checkUnmount refuses to unmount dir unless it is a deltafs mount point
// (a path that does not exist says so, not "not mounted").
func checkUnmount(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unmount %s: does not exist", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	m, err := mountOf(abs)
	if err != nil || !m.found {
		return err
	}
	if m.point != abs {
		return fmt.Errorf("unmount %s: not mounted (it is a directory of the %s mount at %s)", dir, m.fstype, m.point)
	}
	if m.fstype != deltafsType && !isNFSMount(m) {
		return fmt.Errorf("unmount %s: it is a %s mount, not deltafs: refusing (use umount for it)", dir, m.fstype)
	}
	return nil
}

// isNFSMount reports whether m is the kind of NFS mount 'deltafs mount
// --nfs' makes: NFSv3 of a server on loopback.
func isNFSMount(m mountInfo) bool {
	return strings.HasPrefix(m.fstype, "nfs") && strings.HasPrefix(m.source, nfsLoopback+":")
}

// checkNotInMount refuses a table location that is a path inside a
// deltafs mount (MOUNT/t/@v3): ls and history read a table's source, and
// what the mount shows is not a Delta table.
func checkNotInMount(location string) error {
	abs, err := filepath.Abs(location)
	if err != nil {
		return nil // not a local path: a URL
	}
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			m, err := mountOf(p)
			if err == nil && m.found && m.fstype == deltafsType {
				return fmt.Errorf("%s is a path inside a deltafs mount (at %s): use the table's source", location, m.point)
			}
			return nil
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
