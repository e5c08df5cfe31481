package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"github.com/deltafs/deltafs/internal/testkit/nfsdial"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// deltafs serve nfs serves a table on a loopback port it prints; a
// client reads a data file's stored bytes and the table's versions, a
// write is refused, and SIGINT stops the server with a line that says so.
func TestServeNFS(t *testing.T) {
	table := testenv.Fixture(t, "dat/basic_append")
	cmd := exec.Command(binary, "serve", "nfs", "--read-only", "--addr", "127.0.0.1:0", "--cache-dir", t.TempDir(), "t="+table)
	var stderr syncWriter
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	serving := regexp.MustCompile(`serving 1 table over NFSv3 at (127\.0\.0\.1:\d+) \(read-only\), clients 127\.0\.0\.0/8,::1/128`)
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if m := serving.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no serving line; stderr:\n%s", stderr.String())
		}
	}
	c, err := nfsdial.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	v, err := (&nfsc.Mount{Client: c}).Mount("/", rpc.AuthNull)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := v.ReadDirPlus("t")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if s := strings.Join(names, " "); !strings.Contains(s, "@v0") || !strings.Contains(s, "@v1") || !strings.Contains(s, "@latest") {
		t.Errorf("t lists %q, want @v0, @v1, @latest", names)
	}
	parts, _ := filepath.Glob(filepath.Join(table, "*.parquet"))
	if len(parts) == 0 {
		t.Fatal("no data file in the fixture")
	}
	want, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	f, err := v.Open("t/@v1/" + filepath.Base(parts[0]))
	if err != nil {
		t.Fatalf("open over NFS: %v", err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("read %d bytes (%v), want the stored file's %d", len(got), err, len(want))
	}
	if sf, err := v.Open(".deltafs-status.json"); err != nil {
		t.Errorf("status file over NFS: %v", err)
	} else {
		st, _ := io.ReadAll(sf)
		sf.Close()
		if !strings.Contains(string(st), `"nfsAddress": "`+addr+`"`) {
			t.Errorf("status file %.300s: want nfsAddress %s", st, addr)
		}
	}
	if _, err := v.Create("t/inbox/x.parquet", 0o644); err == nil {
		t.Error("create over NFS: no error, want read-only")
	}
	v.Close()
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGINT: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop on SIGINT")
	}
	if !strings.Contains(stderr.String(), "deltafs: stopped serving "+addr) {
		t.Errorf("stderr:\n%s\nwant 'stopped serving %s'", stderr.String(), addr)
	}
}

// A non-loopback address needs --allow; --allow takes IPs and networks.
func TestServeNFSAllow(t *testing.T) {
	for _, c := range []struct {
		addr, allow, want string
	}{
		{"127.0.0.1:2049", "", "127.0.0.0/8,::1/128"},
		{"[::1]:2049", "", "127.0.0.0/8,::1/128"},
		{"0.0.0.0:2049", "", "error: not a loopback address"},
		{"192.168.1.2:2049", "", "error: not a loopback address"},
		{"0.0.0.0:2049", "10.1.2.3/8, 192.168.1.20", "10.0.0.0/8,192.168.1.20/32"},
		{"0.0.0.0:2049", "bogus", "error: not an IP address"},
		{"nohostport", "", "error: --addr"},
	} {
		nets, err := allowedClients(c.addr, c.allow)
		got := prefixesString(nets)
		if err != nil {
			got = "error: " + err.Error()
		}
		isErr := strings.HasPrefix(c.want, "error: ")
		if (err != nil) != isErr || !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) {
			t.Errorf("allowedClients(%q, %q) = %q, want %q", c.addr, c.allow, got, c.want)
		}
	}
	_, errOut, code := deltafs(t, "serve", "nfs", "--addr", "0.0.0.0:0", testenv.Fixture(t, "dat/basic_append"))
	if code != 2 || !strings.Contains(errOut, "--allow") {
		t.Errorf("serve nfs on 0.0.0.0 without --allow: exit %d, stderr %q; want 2 and a word on --allow", code, errOut)
	}
	_, errOut, code = deltafs(t, "serve", "smb", "x")
	if code != 2 || !strings.Contains(errOut, "only protocol served is nfs") {
		t.Errorf("serve smb: exit %d, stderr %q", code, errOut)
	}
}

// The OS mount commands of 'deltafs mount --nfs', as strings (this
// machine's kernel has no NFS client to run them).
func TestNFSMountCommands(t *testing.T) {
	for _, c := range []struct {
		goos string
		want string
	}{
		{"darwin", "mount_nfs -o vers=3,tcp,port=12049,mountport=12049,actimeo=1,nolocks,locallocks,noresvport 127.0.0.1:/ /Volumes/delta"},
		{"linux", "mount -t nfs -o vers=3,tcp,port=12049,mountport=12049,actimeo=1,nolock 127.0.0.1:/ /Volumes/delta"},
	} {
		if got := strings.Join(nfsMountCommand(c.goos, 12049, "/Volumes/delta"), " "); got != c.want {
			t.Errorf("%s: %q\nwant %q", c.goos, got, c.want)
		}
	}
	for _, c := range []struct {
		goos string
		lazy bool
		want string
	}{
		{"darwin", false, "umount /mnt/d"}, {"darwin", true, "umount -f /mnt/d"},
		{"linux", false, "umount /mnt/d"}, {"linux", true, "umount -l /mnt/d"},
	} {
		if got := strings.Join(nfsUnmountCommand(c.goos, "/mnt/d", c.lazy), " "); got != c.want {
			t.Errorf("%s lazy=%v: %q, want %q", c.goos, c.lazy, got, c.want)
		}
	}
	// deltafs unmount takes an NFS mount of a loopback server, and no other.
	for _, c := range []struct {
		m    mountInfo
		want bool
	}{
		{mountInfo{fstype: "nfs", source: "127.0.0.1:/"}, true},
		{mountInfo{fstype: "nfs4", source: "127.0.0.1:/"}, true},
		{mountInfo{fstype: "nfs", source: "fileserver:/export"}, false},
		{mountInfo{fstype: "ext4", source: "/dev/vda"}, false},
	} {
		if got := isNFSMount(c.m); got != c.want {
			t.Errorf("isNFSMount(%+v) = %v", c.m, got)
		}
	}
}

// Where the OS's NFS mount fails (here: no mount command on PATH),
// 'deltafs mount --nfs' says which command failed and why, exits 1 and
// leaves nothing behind.
func TestMountNFSFailureSaysTheCommand(t *testing.T) {
	mnt := t.TempDir()
	cmd := exec.Command(binary, "mount", "--nfs", "--read-only", "--cache-dir", t.TempDir(), "t="+testenv.Fixture(t, "dat/basic_append"), mnt)
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	errOut := stderr.String()
	if err == nil || code != 1 || !strings.Contains(errOut, "over NFS: mount -t nfs -o vers=3,tcp,port=") || !strings.Contains(errOut, " 127.0.0.1:/ "+mnt) {
		t.Errorf("exit %d, stderr %q; want 1 and the failed mount command", code, errOut)
	}
	if names, _ := os.ReadDir(mnt); len(names) != 0 {
		t.Errorf("mountpoint holds %d entries after a failed mount", len(names))
	}
}
