package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func mountedAt(t *testing.T, dir string) string {
	t.Helper()
	m, err := mountOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.found && m.point == dir {
		return m.fstype
	}
	return ""
}

// Refused mountpoints say why and leave nothing mounted.
func TestMountRefusesBadMountpoints(t *testing.T) {
	testenv.RequireFUSE(t)
	table := testenv.Fixture(t, "dat/basic_append")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ mnt, want string }{
		{file, "is not a directory"},
		{filepath.Join(dir, "missing"), "does not exist"},
	} {
		_, errOut, code := deltafs(t, "mount", "--read-only", "--cache-dir", t.TempDir(), table, c.mnt)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("mount at %s: exit %d, stderr %q; want failure saying %q", c.mnt, code, errOut, c.want)
		}
		if fstype := mountedAt(t, c.mnt); fstype != "" {
			syscall.Unmount(c.mnt, syscall.MNT_DETACH)
			t.Errorf("mount at %s failed but left a %s mount", c.mnt, fstype)
		}
	}
}

// mountTable serves table at a new directory until the test ends.
func mountTable(t *testing.T, table string) string {
	t.Helper()
	mnt := t.TempDir()
	cmd := exec.Command(binary, "mount", "--read-only", "--cache-dir", t.TempDir(), "t="+table, mnt)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	for i := 0; mountedAt(t, mnt) == ""; i++ {
		if i == 500 {
			t.Fatal("mount did not appear")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return mnt
}

// A mount over a mount point, or inside a deltafs mount, is refused.
func TestMountRefusesToStack(t *testing.T) {
	testenv.RequireFUSE(t)
	table := testenv.Fixture(t, "dat/basic_append")
	mnt := mountTable(t, table)
	for _, c := range []struct{ at, want string }{
		{mnt, "already a mount point"},
		{filepath.Join(mnt, "t", "@v1"), "inside the deltafs mount"},
	} {
		_, errOut, code := deltafs(t, "mount", "--read-only", "--cache-dir", t.TempDir(), table, c.at)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("mount at %s: exit %d, stderr %q; want failure saying %q", c.at, code, errOut, c.want)
		}
	}
	m, _ := mountOf(filepath.Join(mnt, "t"))
	if m.point != mnt {
		t.Errorf("%s/t is in the mount at %s, want %s (stacked)", mnt, m.point, mnt)
	}
}

// unmount refuses what is not a deltafs mount, and says when a directory
// is not mounted.
func TestUnmountOnlyDeltafs(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "mounting a tmpfs needs root")
	}
	tmp := t.TempDir()
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"); err != nil {
		testenv.Skip(t, "cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(tmp, syscall.MNT_DETACH) })
	_, errOut, code := deltafs(t, "unmount", tmp)
	if code == 0 || !strings.Contains(errOut, "not deltafs") {
		t.Errorf("unmount of a tmpfs: exit %d, stderr %q; want a refusal", code, errOut)
	}
	if mountedAt(t, tmp) != "tmpfs" {
		t.Errorf("the tmpfs at %s was unmounted", tmp)
	}
	plain := t.TempDir()
	_, errOut, code = deltafs(t, "unmount", plain)
	if code == 0 || !strings.Contains(errOut, "not mounted") {
		t.Errorf("unmount of a plain directory: exit %d, stderr %q; want 'not mounted'", code, errOut)
	}
}

// unmount of a busy mount suggests --lazy; a deltafs mount unmounts.
func TestUnmountBusySuggestsLazy(t *testing.T) {
	testenv.RequireFUSE(t)
	mnt := mountTable(t, testenv.Fixture(t, "dat/basic_append"))
	f, err := os.Open(filepath.Join(mnt, "t", "@v0"))
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := deltafs(t, "unmount", mnt)
	f.Close()
	if code == 0 || !strings.Contains(errOut, "--lazy") {
		t.Errorf("unmount with an open directory: exit %d, stderr %q; want a hint at --lazy", code, errOut)
	}
	if _, errOut, code := deltafs(t, "unmount", mnt); code != 0 {
		t.Errorf("unmount: exit %d: %s", code, errOut)
	}
}

// A mountpoint whose deltafs was killed (the kernel answers ENOTCONN or,
// on newer kernels, ECONNABORTED) is named as such, with the command
// that clears it.
func TestMountAtDeadMountSaysHowToClearIt(t *testing.T) {
	testenv.RequireFUSE(t)
	table := testenv.Fixture(t, "dat/basic_append")
	mnt := t.TempDir()
	cmd := exec.Command(binary, "mount", "--read-only", "--cache-dir", t.TempDir(), "t="+table, mnt)
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	// Killed while its own first access to the mount (go-fuse's ping) is
	// in flight, a FUSE server waits forever for itself: kill it only once
	// it says it is mounted.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "deltafs: mounted") {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the mount exited before saying it was mounted")
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the mount did not say it was mounted within 30 s")
	}
	cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed mount did not exit within 30 s")
	}
	_, errOut, code := deltafs(t, "mount", "--read-only", "--cache-dir", t.TempDir(), table, mnt)
	if want := "unmount --lazy " + mnt; code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("mount at a dead mount: exit %d, stderr %q; want failure saying %q", code, errOut, want)
	}
}
