package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/sample"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func TestFUSEMissing(t *testing.T) {
	dev := filepath.Join(t.TempDir(), "fuse")
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	found := func(string) (string, error) { return "/usr/bin/fusermount3", nil }
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	for _, tt := range []struct {
		name     string
		dev      string
		euid     int
		lookPath func(string) (string, error)
		want     string // substring of the message; "" means FUSE is usable
	}{
		{"no device", filepath.Join(t.TempDir(), "none"), 0, found, "apt-get install fuse3"},
		{"root without helper", dev, 0, notFound, ""},
		{"user with helper", dev, 1000, found, ""},
		{"user without helper", dev, 1000, notFound, "fusermount3 is not installed"},
		{"user cannot open the device", t.TempDir(), 1000, found, "cannot open"},
	} {
		got := fuseMissing(tt.dev, tt.euid, tt.lookPath)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// demoOrder is the data file schema of the sample (partition column aside).
type demoOrder struct {
	OrderID  *int64  `parquet:"order_id,optional"`
	Customer *string `parquet:"customer,optional"`
}

// startDemo runs `deltafs demo --dir dir` and waits for its ready line. The
// process is killed and the mount detached if the test ends early.
func startDemo(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "demo", "--dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
			unmountPath(filepath.Join(dir, "mnt"), true)
		}
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if sc.Text() == demoReady {
				ok = true
				break
			}
		}
		ready <- ok
		io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("demo exited before its ready line")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("demo not ready after 60s")
	}
	return cmd
}

// stopDemo signals the demo and checks that it exits with status 0 and
// leaves no mount behind.
func stopDemo(t *testing.T, cmd *exec.Cmd, sig syscall.Signal, mnt string) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo after %v: %v, want exit status 0", sig, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("demo still running 30s after %v", sig)
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(info), " "+mnt+" ") {
		t.Errorf("%s still mounted after the demo exited", mnt)
	}
}

// readLatest reads every Parquet file under @latest of the mounted sample
// and returns the number of rows and of DeletedCustomer rows of orders
// the DELETE covered.
func readLatest(t *testing.T, mnt string) (rows, undeleted int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(mnt, sample.Table, "@latest", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no parquet files under @latest (%v)", err)
	}
	for _, f := range files {
		got, err := parquet.ReadFile[demoOrder](f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		rows += len(got)
		for _, r := range got {
			if *r.Customer == sample.DeletedCustomer && *r.OrderID <= 200 {
				undeleted++
			}
		}
	}
	return rows, undeleted
}

// TestDemoServesSample runs the demo twice on one dir (generate, then
// reuse), reads @latest through the mount and stops it with each signal.
func TestDemoServesSample(t *testing.T) {
	testenv.RequireFUSE(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := startDemo(t, dir)
		rows, undeleted := readLatest(t, mnt)
		if want := sample.LiveRows(sample.LatestVersion); rows != int(want) || undeleted != 0 {
			t.Errorf("@latest: %d rows, %d deleted ones served; want %d, 0", rows, undeleted, want)
		}
		link, err := os.Readlink(filepath.Join(mnt, sample.Table, "@latest"))
		if err != nil || link != "@v6" {
			t.Errorf("readlink @latest = %q, %v; want @v6", link, err)
		}
		hist, err := os.ReadFile(filepath.Join(mnt, sample.Table, "_history.jsonl"))
		if n := strings.Count(string(hist), "\n"); err != nil || n != int(sample.LatestVersion)+1 {
			t.Errorf("_history.jsonl: %d lines (%v), want %d", n, err, sample.LatestVersion+1)
		}
		stopDemo(t, cmd, sig, mnt)
	}
	if _, err := os.Stat(filepath.Join(dir, sample.Table, "_delta_log")); errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sample table is gone after the demo")
	}
}
