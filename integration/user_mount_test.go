package integration

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// nobody is the unprivileged user the test mounts as.
const nobodyID = 65534

// TestMountAsNormalUser runs `deltafs mount` as an unprivileged user, which
// mounts through the setuid fusermount3 helper instead of mounting
// directly: the tree is served, a file reads, and SIGTERM unmounts.
// It needs root (to switch to the user) and fusermount3; /dev/fuse is made
// world-usable for the test (as on a laptop) and restored afterwards.
func TestMountAsNormalUser(t *testing.T) {
	testenv.RequireFUSE(t)
	if os.Geteuid() != 0 {
		testenv.Skip(t, "switching to an unprivileged user needs root")
	}
	helper, err := exec.LookPath("fusermount3")
	if err != nil {
		testenv.Skip(t, "fusermount3 not installed (apt-get install fuse3)")
	}
	if fi, err := os.Stat(helper); err != nil || fi.Mode()&os.ModeSetuid == 0 {
		testenv.Skip(t, "%s is not setuid root", helper)
	}
	openDevFuse(t)

	dir := worldDir(t)
	bin := filepath.Join(dir, "deltafs")
	copyExecutable(t, deltafsBin(t), bin)
	table := filepath.Join(dir, "table")
	if err := os.CopyFS(table, os.DirFS(testenv.Fixture(t, fixtureAppend))); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	for _, d := range []string{table, mnt, filepath.Join(dir, "cache")} {
		os.MkdirAll(d, 0o755)
		chownTree(t, d)
	}

	cmd := exec.Command(bin, "mount", "--cache-dir", filepath.Join(dir, "cache"), "t="+table, mnt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); exec.Command("fusermount3", "-u", "-z", mnt).Run() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	start := time.Now()
	waitFor(t, lines, "deltafs: mounted ")
	t.Logf("mounted after %v", time.Since(start))

	if !mountedBy(t, mnt, "fuse.") {
		t.Fatalf("%s is not a FUSE mount", mnt)
	}
	// The user sees the tree; other users (root included) do not, since
	// allow_other was not asked for.
	if out := asNobody(t, "readlink", filepath.Join(mnt, "t", "@latest")); out != "@v1" {
		t.Fatalf("@latest -> %q, want @v1", out)
	}
	names := strings.Fields(asNobody(t, "ls", filepath.Join(mnt, "t", "@v1")))
	if len(names) != 2 {
		t.Fatalf("@v1 lists %v, want 2 files", names)
	}
	want, err := os.ReadFile(filepath.Join(table, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if got := asNobody(t, "cat", filepath.Join(mnt, "t", "@v1", names[0])); got != strings.TrimSpace(string(want)) {
		t.Errorf("%s read as the user differs from the table file", names[0])
	}
	if _, err := os.Readlink(filepath.Join(mnt, "t", "@latest")); !errors.Is(err, syscall.EACCES) {
		t.Errorf("root reading a user's mount without allow_other: %v, want EACCES", err)
	}

	t.Logf("checked after %v", time.Since(start))
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("deltafs mount exited with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("deltafs mount did not exit after SIGTERM")
	}
	t.Logf("exited after %v", time.Since(start))
	if mountedBy(t, mnt, "fuse.") {
		t.Errorf("%s still mounted after SIGTERM", mnt)
	}
}

// asNobody runs a command as the unprivileged user and returns its
// output, trimmed.
func asNobody(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v as nobody: %v", name, args, err)
	}
	return strings.TrimSpace(string(out))
}

// openDevFuse makes /dev/fuse usable by every user until the test ends.
func openDevFuse(t *testing.T) {
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		testenv.Skip(t, "no /dev/fuse")
	}
	mode := fi.Mode().Perm()
	if err := os.Chmod("/dev/fuse", 0o666); err != nil {
		testenv.Skip(t, "cannot chmod /dev/fuse: %v", err)
	}
	t.Cleanup(func() { os.Chmod("/dev/fuse", mode) })
}

// worldDir is a temp dir every user can traverse (t.TempDir's parents
// are private to root).
func worldDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/tmp", "deltafs-user-mount-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func chownTree(t *testing.T, root string) {
	filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Lchown(p, nobodyID, nobodyID)
		}
		return err
	})
}

func copyExecutable(t *testing.T, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, lines <-chan string, want string) {
	var seen []string
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("deltafs exited before %q:\n%s", want, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q after 60s:\n%s", want, strings.Join(seen, "\n"))
		}
	}
}

// mountedBy reports whether mnt is a mount point of the given fs type prefix.
func mountedBy(t *testing.T, mnt, fstype string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[4] == mnt {
			for i, x := range f {
				if x == "-" && i+1 < len(f) {
					return strings.HasPrefix(f[i+1], fstype)
				}
			}
		}
	}
	return false
}
