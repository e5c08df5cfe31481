package integration

// The README's first command on a fresh clone: `make demo` builds deltafs,
// generates the sample table, mounts it and says "ready"; a Parquet
// reader reads @latest; Ctrl-C (SIGINT to the process group, as a
// terminal sends it) unmounts and exits. The README's second command,
// `make test`, is not run here: it would run this test again (recursion);
// CI runs it.

import (
	"bufio"
	"bytes"
	"context"
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

// demoReadyLine is what `deltafs demo` prints once the mount serves.
const demoReadyLine = "deltafs demo: ready"

func TestNewcomerMakeDemoOnFreshClone(t *testing.T) {
	testenv.RequireFUSE(t)
	for _, tool := range []string{"git", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "%s not on PATH: %v", tool, err)
		}
	}
	clone := filepath.Join(t.TempDir(), "deltafs")
	if out, err := exec.Command("git", "clone", "--quiet", "--no-hardlinks", testenv.RepoRoot(t), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "demo")
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(clone, "demo", "mnt")
	t.Cleanup(func() { exec.Command("fusermount3", "-uz", mnt).Run(); syscall.Unmount(mnt, syscall.MNT_DETACH) })
	tour := waitForLine(t, stdout, demoReadyLine, &stderr)
	go io.Copy(io.Discard, stdout)

	latest := filepath.Join(mnt, sample.Table, "@latest")
	rows, files := readTableRows(t, latest)
	if want := sample.LiveRows(sample.LatestVersion); rows != want || files == 0 {
		t.Errorf("@latest: %d rows in %d files, want %d rows", rows, files, want)
	}
	if !strings.Contains(tour, "readlink") || !strings.Contains(tour, "_history.jsonl") {
		t.Errorf("the tour does not show what to try:\n%s", tour)
	}

	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // Ctrl-C
	werr := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("make demo did not exit after SIGINT; stderr:\n%s", stderr.String())
	}
	if !exitedCleanly(werr) {
		t.Errorf("make demo: %v; stderr:\n%s", werr, stderr.String())
	}
	if !strings.Contains(stderr.String(), "deltafs demo: unmounted "+mnt) {
		t.Errorf("no clean unmount reported; stderr:\n%s", stderr.String())
	}
	if isMountpoint(mnt) {
		t.Errorf("%s is still mounted after exit", mnt)
	}
}

// waitForLine reads lines until one contains want and returns the text
// read; it fails the test if the output ends first.
func waitForLine(t *testing.T, r io.Reader, want string, stderr *bytes.Buffer) string {
	t.Helper()
	var seen strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), want) {
			return seen.String()
		}
	}
	t.Fatalf("make demo ended before %q; stdout:\n%s\nstderr:\n%s", want, seen.String(), stderr.String())
	return ""
}

// readTableRows reads every Parquet file under a version directory with
// parquet-go and returns the rows read and the number of files.
func readTableRows(t *testing.T, dir string) (rows int64, files int) {
	t.Helper()
	err := filepath.WalkDir(dir+"/", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			return err
		}
		n, err := countRows(pf)
		rows += n
		files++
		return err
	})
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return rows, files
}

// countRows reads every row of pf (decoding the pages, not trusting the
// footer) and checks the footer agrees.
func countRows(pf *parquet.File) (int64, error) {
	var n int64
	buf := make([]parquet.Row, 128)
	for _, rg := range pf.RowGroups() {
		r := parquet.NewRowGroupReader(rg)
		for {
			k, err := r.ReadRows(buf)
			n += int64(k)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return n, err
			}
		}
	}
	if n != pf.NumRows() {
		return n, errors.New("rows read differ from the footer's count")
	}
	return n, nil
}

// exitedCleanly accepts exit 0 or death by the SIGINT sent to the group
// (make re-raises it after its child exits).
func exitedCleanly(err error) bool {
	var ee *exec.ExitError
	if err == nil {
		return true
	}
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

// isMountpoint reports whether dir is on another device than its parent.
func isMountpoint(dir string) bool {
	var st, parent syscall.Stat_t
	if syscall.Stat(dir, &st) != nil || syscall.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}
