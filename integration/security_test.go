package integration

// Security of the mount: inbox names cannot escape the inbox or reach
// _delta_log, nothing but regular files and partition dirs can be created,
// the kernel enforces uid/gid/umask (default_permissions), allow_other is
// off unless asked, and credentials in source URLs never reach the logs.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// tableFiles lists every file under root with its size, for before/after
// comparisons.
func tableFiles(t *testing.T, root string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !d.IsDir() && !fi.Mode().IsRegular() {
			t.Errorf("%s is not a regular file (%v)", p, fi.Mode())
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInboxNamesStayInside tries hostile names in the inbox: each is
// refused (temporary ones are staged), and the table (its files and its
// versions) is unchanged.
func TestInboxNamesStayInside(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureAppend)
	before := tableFiles(t, root)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	inbox := filepath.Join(mnt, "t", "inbox")
	data := parquetBytes(t, []basicRow{{Letter: ptr("x"), Number: ptr[int64](1)}})
	names := []string{
		"../x.parquet", "../_delta_log/00000000000000000099.json", "../../t/x.parquet", "..", ".",
		".", "sub/x.parquet",
		strings.Repeat("n", 201) + ".parquet", strings.Repeat("n", 300),
		"a\x01b.parquet", "a\nb.parquet", "a\x7fb.parquet", "\xff\xfe.parquet",
	}
	for _, name := range names {
		err := os.WriteFile(filepath.Join(inbox, name), data, 0o644)
		if err == nil {
			t.Errorf("inbox/%q: written, want refused", name)
		}
		if err := os.Mkdir(filepath.Join(inbox, name), 0o755); err == nil {
			t.Errorf("mkdir inbox/%q: made, want refused", name)
		}
	}
	// Temporary names are staged (and a directory so named is a scratch
	// directory), never committed by close: the table does not change.
	for _, name := range []string{"_delta_log", "_x.parquet", ".x.parquet"} {
		if err := os.WriteFile(filepath.Join(inbox, name), data, 0o644); err != nil {
			t.Errorf("inbox/%q: %v, want staged", name, err)
		}
		if err := os.Mkdir(filepath.Join(inbox, name+".d"), 0o755); err != nil {
			t.Errorf("mkdir inbox/%q: %v, want a scratch directory", name+".d", err)
		}
	}
	if err := os.Mkdir(filepath.Join(mnt, "t", "_delta_log"), 0o755); err == nil {
		t.Error("mkdir t/_delta_log: made")
	}
	if got := tableFiles(t, root); !sameSizes(got, before) {
		t.Errorf("the table's files changed:\nbefore %v\nafter  %v", before, got)
	}
	if v := latestSnapshot(t, root).Version(); v != 1 {
		t.Errorf("latest version %d after refused names, want 1", v)
	}
}

func sameSizes(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

// TestNoLinksOrSpecialFiles tries symlinks, hard links, FIFOs and device
// nodes everywhere in a writable mount: all are refused and nothing lands.
func TestNoLinksOrSpecialFiles(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureAppend)
	before := tableFiles(t, root)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	dataFile := firstRegular(t, filepath.Join(mnt, "t", "@v1"))
	for _, dir := range []string{mnt, filepath.Join(mnt, "t"), filepath.Join(mnt, "t", "@v1"), filepath.Join(mnt, "t", "inbox")} {
		p := filepath.Join(dir, "x.parquet")
		if err := os.Symlink(dataFile, p); err == nil {
			t.Errorf("symlink %s: made", p)
		}
		if err := os.Link(dataFile, p); err == nil {
			t.Errorf("hard link %s: made", p)
		}
		if err := syscall.Mkfifo(p, 0o644); err == nil {
			t.Errorf("fifo %s: made", p)
		}
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o644, 0x0103); err == nil {
			t.Errorf("char device %s: made", p)
		}
		if err := syscall.Mknod(p, syscall.S_IFREG|0o644, 0); err == nil && !strings.HasSuffix(dir, "inbox") {
			t.Errorf("mknod regular %s outside the inbox: made", p)
		}
	}
	if got := tableFiles(t, root); !sameSizes(got, before) {
		t.Errorf("the table's files changed:\nbefore %v\nafter  %v", before, got)
	}
}

func firstRegular(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			return filepath.Join(dir, e.Name())
		}
	}
	t.Fatalf("no file in %s", dir)
	return ""
}

// mountOptions returns the FUSE options of the mount at mnt from
// /proc/self/mountinfo (mount options and super options).
func mountOptions(t *testing.T, mnt string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 5 && fields[4] == mnt {
			return strings.Join(fields[5:], " ")
		}
	}
	t.Fatalf("%s not in /proc/self/mountinfo", mnt)
	return ""
}

// asUser runs argv as uid:gid and returns its error.
func asUser(uid, gid uint32, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(strings.TrimSpace(string(out)) + ": " + err.Error())
	}
	return nil
}

// TestPermissions mounts with and without allow_other and checks that
// the kernel enforces the modes, owner and group deltafs reports.
func TestPermissions(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root to run commands as other users")
	}
	fixture := testenv.Fixture(t, fixtureAppend)
	t.Run("private by default", func(t *testing.T) {
		mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: fixture}}})
		opts := mountOptions(t, mnt)
		if strings.Contains(opts, "allow_other") || !strings.Contains(opts, "default_permissions") {
			t.Errorf("mount options %q: want default_permissions and no allow_other", opts)
		}
		openPath(t, mnt)
		if err := asUser(4242, 4242, "ls", filepath.Join(mnt, "t")); err == nil {
			t.Error("another user lists a mount without allow_other")
		}
	})
	t.Run("allow_other with uid, gid and umask", func(t *testing.T) {
		root := testenv.CopyFixture(t, fixtureAppend)
		mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, AllowOther: true, UID: 4100, GID: 4200, Umask: 0o027})
		openPath(t, mnt)
		if opts := mountOptions(t, mnt); !strings.Contains(opts, "allow_other") || !strings.Contains(opts, "default_permissions") {
			t.Errorf("mount options %q: want allow_other and default_permissions", opts)
		}
		file := firstRegular(t, filepath.Join(mnt, "t", "@v1"))
		checkMode(t, file, 0o440, 4100, 4200)
		checkMode(t, filepath.Join(mnt, "t", "@v1"), 0o550, 4100, 4200)
		checkMode(t, filepath.Join(mnt, "t", "inbox"), 0o750, 4100, 4200)
		staged := filepath.Join(mnt, "t", "inbox", "y.parquet")
		for _, c := range []struct {
			who      string
			uid, gid uint32
			read     bool
			write    bool
		}{
			{"owner", 4100, 4100, true, true},
			{"group", 4300, 4200, true, false},
			{"other", 4300, 4300, false, false},
		} {
			if err := asUser(c.uid, c.gid, "cat", file); (err == nil) != c.read {
				t.Errorf("%s reads a data file: %v, want allowed=%v", c.who, err, c.read)
			}
			if err := asUser(c.uid, c.gid, "ls", filepath.Join(mnt, "t", "@v1")); (err == nil) != c.read {
				t.Errorf("%s lists @v1: %v, want allowed=%v", c.who, err, c.read)
			}
			err := asUser(c.uid, c.gid, "sh", "-c", "printf x > "+staged)
			if c.write != (err == nil || !strings.Contains(err.Error(), "Permission denied")) {
				t.Errorf("%s writes into the inbox: %v, want allowed=%v", c.who, err, c.write)
			}
		}
	})
}

// TestAllowOtherMirrorsSource mounts local tables for other users
// (allow_other, no --uid or --gid): each entry shows its source's owner,
// group and mode (write bits cleared; inbox/ takes _delta_log's), and the
// kernel lets each user do exactly what that user could do on the source.
// Before, every user listed every table, read a 0700
// table, a 0600 data file and root's staged temporary.
func TestAllowOtherMirrorsSource(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root to run commands as other users")
	}
	const alice, bob, staff = 4100, 4300, 4200
	open := testenv.CopyFixture(t, fixtureAppend)
	private := testenv.CopyFixture(t, fixtureAppend)
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	// alice owns open's log (she may append); one data file is root's
	// alone, another is staff's group.
	log := filepath.Join(open, "_delta_log")
	if err := os.Chown(log, alice, staff); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(log, 0o750); err != nil {
		t.Fatal(err)
	}
	mnt := mountFS(t, mount.Config{AllowOther: true, Sources: []mount.Source{{Name: "open", URL: open}, {Name: "private", URL: private}}})
	openPath(t, mnt)
	v1 := filepath.Join(mnt, "open", "@v1")
	ents, err := os.ReadDir(v1)
	if err != nil || len(ents) < 2 {
		t.Fatalf("@v1: %v, %d entries; want 2 data files", err, len(ents))
	}
	secret, shared := filepath.Join(v1, ents[0].Name()), filepath.Join(v1, ents[1].Name())
	if err := os.Chmod(filepath.Join(open, ents[0].Name()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(open, ents[1].Name()), 0, staff); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(open, ents[1].Name()), 0o640); err != nil {
		t.Fatal(err)
	}
	checkMode(t, filepath.Join(mnt, "private"), 0o500, 0, 0)
	checkMode(t, filepath.Join(mnt, "open", "@v1"), 0o555, 0, 0)
	checkMode(t, filepath.Join(mnt, "open", "inbox"), 0o750, alice, staff)
	checkMode(t, secret, 0o400, 0, 0)
	checkMode(t, shared, 0o440, 0, staff)

	// root stages a temporary: it is root's alone.
	staged := filepath.Join(mnt, "open", "inbox", "_root.tmp")
	if err := os.WriteFile(staged, []byte("root's"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkMode(t, staged, 0o600, 0, 0)
	aliceFile := filepath.Join(mnt, "open", "inbox", "_alice.tmp")
	for _, c := range []struct {
		what    string
		uid     uint32
		gid     uint32
		argv    []string
		allowed bool
	}{
		{"bob lists the private table", bob, bob, []string{"ls", filepath.Join(mnt, "private")}, false},
		{"bob lists private's @v1", bob, bob, []string{"ls", filepath.Join(mnt, "private", "@v1")}, false},
		{"bob lists open's @v1", bob, bob, []string{"ls", v1}, true},
		{"bob reads root's 0600 file", bob, bob, []string{"cat", secret}, false},
		{"bob reads staff's 0640 file", bob, bob, []string{"cat", shared}, false},
		{"a staff member reads staff's 0640 file", bob, staff, []string{"cat", shared}, true},
		{"bob reads root's staged temporary", bob, bob, []string{"cat", staged}, false},
		{"alice reads root's staged temporary", alice, staff, []string{"cat", staged}, false},
		{"bob writes into the inbox", bob, bob, []string{"sh", "-c", "printf x > " + filepath.Join(mnt, "open", "inbox", "_bob.tmp")}, false},
		{"a staff member writes into the inbox", bob, staff, []string{"sh", "-c", "printf x > " + filepath.Join(mnt, "open", "inbox", "_staff.tmp")}, false},
		{"alice writes into the inbox", alice, staff, []string{"sh", "-c", "printf x > " + aliceFile}, true},
		{"alice reads her staged file", alice, staff, []string{"cat", aliceFile}, true},
		{"a staff member reads alice's staged file", bob, staff, []string{"cat", aliceFile}, false},
		{"a staff member reads inbox/_status.jsonl", bob, staff, []string{"cat", filepath.Join(mnt, "open", "inbox", "_status.jsonl")}, true},
	} {
		err := asUser(c.uid, c.gid, c.argv...)
		if (err == nil) != c.allowed {
			t.Errorf("%s: %v, want allowed=%v", c.what, err, c.allowed)
		} else if err != nil && !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("%s: %v, want Permission denied", c.what, err)
		}
	}
	checkMode(t, aliceFile, 0o600, alice, staff)

	// A chmod on the source shows at the table's next refresh.
	if err := os.Chmod(private, 0o755); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return asUser(bob, bob, "ls", filepath.Join(mnt, "private", "@v1")) == nil }) {
		t.Error("bob still cannot list private's @v1 after chmod 0755 of its source")
	}
}

// openPath lets every user traverse the temp dirs above mnt (t.TempDir
// makes them 0700), so that the mount's own modes decide.
func openPath(t *testing.T, mnt string) {
	t.Helper()
	for d := filepath.Dir(mnt); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func checkMode(t *testing.T, p string, perm os.FileMode, uid, gid uint32) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != perm || st.Uid != uid || st.Gid != gid {
		t.Errorf("%s: mode %v uid %d gid %d, want %v %d %d", p, fi.Mode().Perm(), st.Uid, st.Gid, perm, uid, gid)
	}
}

// TestCredentialsNeverLogged mounts sources whose URLs carry secrets
// (query parameters, user info) and that cannot be reached: the error and
// every log line name the source without the secret.
func TestCredentialsNeverLogged(t *testing.T) {
	const secret = "XYZSECRET7f3a"
	urls := []string{
		"s3://bucket/t?endpoint=http://127.0.0.1:1&region=us-east-1&secret_access_key=" + secret,
		"s3://AKIAEXAMPLE:" + secret + "@bucket/t?endpoint=http://127.0.0.1:1&region=us-east-1",
		"azblob://container/t?sig=" + secret + "&sv=2020-01-01",
		"gs://bucket/t?access_token=" + secret,
		"mem://t?token=" + secret,
	}
	for _, u := range urls {
		var logs lockedBuffer
		cfg := mount.Config{
			Sources: []mount.Source{{Name: "t", URL: u}}, Mountpoint: t.TempDir(), CacheDir: t.TempDir(), ReadOnly: true,
			Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug})),
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		srv, err := mount.Mount(ctx, cfg)
		cancel()
		if err == nil {
			srv.Unmount()
			t.Errorf("%s: mounted an unreachable source", u)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("secret logged for %s:\nerr: %v\nlogs: %s", u, err, logs.String())
		}
	}
}
