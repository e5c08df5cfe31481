package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/csi"
)

// csiMounter serves each published volume with its own `deltafs mount`
// process, started as --daemon starts one (startBackground): a failure
// to mount comes back as the process's own error, and a served volume
// outlives the plugin process.
type csiMounter struct {
	logLevel string   // the plugin's, for volumes that do not set theirs
	out      *os.File // where the volume processes write (the plugin's stderr)
}

var _ csi.Mounter = (*csiMounter)(nil)

// Mount starts the volume's process and waits until it serves v.Target.
func (m *csiMounter) Mount(ctx context.Context, v *csi.Volume) (int, error) {
	args, err := m.mountArgs(v)
	if err != nil {
		return 0, err
	}
	env, err := v.Env(os.Environ())
	if err != nil {
		return 0, err
	}
	cmd, err := startBackground(ctx, args, env, m.out)
	if err != nil {
		if ctx.Err() != nil {
			return 0, err // the caller gave up: DEADLINE_EXCEEDED, kubelet retries
		}
		if len(v.Secrets) == 0 && v.Attributes[csi.AttrNodeCredentials] != "true" {
			err = fmt.Errorf("%w (the volume has no nodePublishSecretRef secret: an object store is read without credentials)", err)
		}
		return 0, fmt.Errorf("%w: %w", csi.ErrUnreadable, err)
	}
	go cmd.Wait() // reaped when it ends while this plugin runs
	return cmd.Process.Pid, nil
}

// mountArgs are the `deltafs mount` arguments of v: the plugin's flags,
// the volume's (checked by the mount command's own flag set), then "--"
// and its sources and the target, so that an attribute's value is only
// ever a value: a source spelled like a flag ("--read-only=false") is a
// source, not a flag.
func (m *csiMounter) mountArgs(v *csi.Volume) ([]string, error) {
	flags := mountFlagSet()
	var set []setting
	var sources []string
	for k, val := range v.Attributes {
		switch k {
		case "source":
			sources = append(sources, val)
		case "config":
			mf, err := parseMountFile("volume attribute config", []byte(val), flags)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", csi.ErrInvalid, err)
			}
			for _, t := range mf.tables {
				sources = append(sources, sourceArg(t.Name, t.URL))
			}
			set = append(set, mf.settings...)
		case csi.AttrNodeCredentials:
		default:
			set = append(set, setting{name: k, value: val, where: "volume attributes"})
		}
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("%w: no source: set the volume attribute source (a table's path or URL) or config", csi.ErrInvalid)
	}
	args := []string{"--volume", v.ID, "--strict", "--allow-other", "--cache-dir", filepath.Join(v.Dir, "cache"),
		"--metrics-addr", "unix:" + csi.MetricsSocket(v.Dir), "--log-level", m.logLevel}
	if v.ReadOnly {
		args = append(args, "--read-only")
	}
	if v.MountGroup != "" {
		args = append(args, "--gid", v.MountGroup) // a gid attribute, after it, wins
	}
	sort.Slice(set, func(i, j int) bool { return set[i].name < set[j].name })
	for _, s := range set {
		if !isVolumeFlag(s.name) {
			return nil, fmt.Errorf("%w: %s: %s: %w (a volume may set %s)", csi.ErrInvalid, s.where, s.name, errVolume, volumeFlagList())
		}
		if err := flags.Set(s.name, s.value); err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", csi.ErrInvalid, s.where, s.name, err)
		}
		args = append(args, "--"+s.name+"="+s.value)
	}
	return append(append(append(args, "--"), sources...), v.Target), nil
}

// sourceArg is a mount.Source as a SOURCE argument.
func sourceArg(name, url string) string {
	if name == "" {
		return url
	}
	return name + "=" + url
}

func isVolumeFlag(name string) bool {
	for _, f := range volumeFlags {
		if f == name {
			return true
		}
	}
	return false
}

// Mounted reports whether target is a deltafs mount point (serving or
// dead): another file system there is never deltafs's to unmount.
func (m *csiMounter) Mounted(target string) (bool, error) {
	abs, err := filepath.Abs(target)
	if err != nil {
		return false, err
	}
	info, err := mountOf(abs)
	return info.found && info.point == abs && info.fstype == "fuse.deltafs", err
}

// Unmount unmounts target (detaching it if busy: the pods using it are
// gone when Kubernetes unpublishes) and waits for the process pid to
// exit: it does once its mount is gone. Past unmountWait it is ended.
func (m *csiMounter) Unmount(ctx context.Context, target string, pid int) error {
	if mounted, _ := m.Mounted(target); mounted {
		if err := syscall.Unmount(target, 0); err != nil {
			if !errors.Is(err, syscall.EBUSY) {
				return fmt.Errorf("unmount %s: %w", target, err)
			}
			if err := syscall.Unmount(target, detachFlag); err != nil {
				return fmt.Errorf("unmount %s (detach): %w", target, err)
			}
		}
	}
	if pid <= 0 {
		return nil
	}
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 && m.Alive(pid, target) {
			syscall.Kill(pid, sig)
		}
		if waitGone(ctx, func() bool { return !m.Alive(pid, target) }, unmountWait) {
			return nil
		}
	}
	return fmt.Errorf("the process of %s (pid %d) did not exit", target, pid)
}

// unmountWait is how long Unmount waits for a volume's process before
// signalling it (then as long again after SIGTERM, and after SIGKILL).
const unmountWait = 10 * time.Second

// waitGone polls gone until it holds (true) or d or ctx ends (false).
func waitGone(ctx context.Context, gone func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !gone() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Alive reports whether pid is a running (not zombie) `deltafs mount`
// of target: a pid reused by another process after a restart is not.
func (m *csiMounter) Alive(pid int, target string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return len(args) > 1 && args[1] == "mount" && args[len(args)-1] == target
}
