package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func TestFstabArgs(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string // nil: an error is expected
		err  string
	}{
		{"issue example", []string{"orders=s3://bucket/orders", "/mnt/delta", "-o", "ro,allow_other,cache_size=10G,_netdev"},
			[]string{"--daemon", "--read-only=true", "--allow-other=true", "--cache-size=10G", "orders=s3://bucket/orders", "/mnt/delta"}, ""},
		{"mount(8) extras", []string{"/data/wh", "/mnt/d", "-n", "-s", "-o", "rw,nofail,noauto,x-systemd.automount,defaults,nosuid,nodev,log_file=/var/log/d.log"},
			[]string{"--daemon", "--read-only=false", "--log-file=/var/log/d.log", "/data/wh", "/mnt/d"}, ""},
		{"joined -o and flags", []string{"-oro,metrics_addr=127.0.0.1:9464", "t=/x", "/m", "-o", "uid=1000,gid=1000,refresh=5s,log_level=debug"},
			[]string{"--daemon", "--read-only=true", "--metrics-addr=127.0.0.1:9464", "--uid=1000", "--gid=1000", "--refresh=5s", "--log-level=debug", "t=/x", "/m"}, ""},
		{"config names the tables", []string{"none", "/mnt/d", "-o", "config=/etc/deltafs/d.yaml"},
			[]string{"--daemon", "--config=/etc/deltafs/d.yaml", "/mnt/d"}, ""},
		{"-r and -t", []string{"-t", "fuse.deltafs", "-r", "/x", "/m"}, []string{"--daemon", "--read-only=true", "/x", "/m"}, ""},
		{"dash spelling", []string{"/x", "/m", "-o", "no-passthrough,xattrs=false"}, []string{"--daemon", "--no-passthrough=true", "--xattrs=false", "/x", "/m"}, ""},
		{"unknown option", []string{"/x", "/m", "-o", "ro,compress"}, nil, `unknown option "compress"`},
		{"bad size", []string{"/x", "/m", "-o", "cache_size=huge"}, nil, `option "cache_size=huge"`},
		{"value missing", []string{"/x", "/m", "-o", "cache_dir"}, nil, "needs a value"},
		{"daemon is implied", []string{"/x", "/m", "-o", "daemon"}, nil, `unknown option "daemon"`},
		{"one argument", []string{"/m", "-o", "ro"}, nil, "want SOURCE and MOUNTPOINT"},
		{"-o without value", []string{"/x", "/m", "-o"}, nil, "-o needs a value"},
		{"unknown dash arg", []string{"/x", "/m", "-z"}, nil, `unknown argument "-z"`},
	}
	for _, c := range cases {
		got, err := fstabArgs(c.args)
		if c.want == nil {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, %v\nwant %q", c.name, got, err, c.want)
		}
	}
}

// TestFstabHelperMountsAndUnmounts runs the binary as mount(8) would run
// mount.fuse.deltafs: it must return once the mount is served, in the
// background, logging to log_file; deltafs unmount ends it.
func TestFstabHelperMountsAndUnmounts(t *testing.T) {
	testenv.RequireFUSE(t)
	table := testenv.Fixture(t, "dat/basic_append")
	dir := t.TempDir()
	helper := filepath.Join(dir, fstabHelperName)
	if err := os.Symlink(binary, helper); err != nil {
		t.Fatal(err)
	}
	mnt, logFile := filepath.Join(dir, "mnt"), filepath.Join(dir, "deltafs.log")
	os.Mkdir(mnt, 0o755)
	cmd := exec.Command(helper, "basic="+table, mnt, "-n", "-o",
		"ro,_netdev,nofail,cache_dir="+filepath.Join(dir, "cache")+",log_file="+logFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, stderr.String())
	}
	if len(out) != 0 {
		t.Errorf("helper printed %q on stdout, want nothing (mount(8) helpers print nothing there)", out)
	}
	_, after, _ := strings.Cut(stderr.String(), "(pid ")
	pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(after), ")"))
	if err != nil {
		t.Fatalf("helper's stderr %q does not give the pid", stderr.String())
	}
	unmounted := false
	t.Cleanup(func() {
		if !unmounted {
			exec.Command(binary, "unmount", "--lazy", mnt).Run()
		}
	})
	if _, err := os.Stat(filepath.Join(mnt, "basic", "@v1")); err != nil {
		t.Errorf("mount not served when the helper returned: %v", err)
	}
	if _, errOut, code := deltafs(t, "unmount", mnt); code != 0 {
		t.Fatalf("unmount: %s", errOut)
	}
	unmounted = true
	if !waitExit(pid, 10*time.Second) {
		t.Errorf("mount process %d still running after unmount", pid)
	}
	log, _ := os.ReadFile(logFile)
	for _, w := range []string{"mounted 1 table at " + mnt, "unmounted " + mnt} {
		if !strings.Contains(string(log), w) {
			t.Errorf("log file lacks %q:\n%s", w, log)
		}
	}
}

func TestDaemonReportsMountFailure(t *testing.T) {
	testenv.RequireFUSE(t)
	dir := t.TempDir()
	start := time.Now()
	_, errOut, code := deltafs(t, "mount", "--daemon", "--log-file", filepath.Join(dir, "log"), "/nonexistent/table", dir)
	if code == 0 || !strings.Contains(errOut, "/nonexistent/table") {
		t.Errorf("exit %d, stderr %q: want a failure naming the source", code, errOut)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

// waitExit polls until no process has pid, for at most d.
func waitExit(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return true
		}
	}
	return false
}
