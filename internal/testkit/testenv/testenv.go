// Package testenv finds what deltafs tests need outside the repository: the
// shared Delta fixtures, a usable FUSE device, tools installed under .tools/.
//
// Only tests import it. Every helper that finds a prerequisite missing skips
// the test with a message naming what is missing and where it was looked
// for, except when DELTAFS_REQUIRE_ALL is set (CI sets it to 1): then the
// test fails instead, so that a skipped test never passes for a proven one.
package testenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	// EnvFixtures names the environment variable that overrides the
	// fixtures directory (the dir holding INDEX.tsv).
	EnvFixtures = "DELTAFS_FIXTURES"
	// EnvRequireAll names the environment variable that turns every skip
	// for a missing prerequisite into a failure when it is true ("1").
	EnvRequireAll = "DELTAFS_REQUIRE_ALL"
	// relFixtures is where the fixtures live relative to the repo root.
	relFixtures = "../shared/fixtures/delta"
)

// FixtureInfo is one line of the fixtures' INDEX.tsv.
type FixtureInfo struct {
	// Name is the fixture's path under the fixtures dir, e.g. "dat/basic_append".
	Name string
	// LatestVersion is the table's latest version, or -1 when the table
	// has none (INDEX.tsv says "-1" or "None": not a valid table).
	LatestVersion int
	// ExpectedVersions lists the dirs under expected/ ("latest", "v0", ...);
	// empty when there are none ("-").
	ExpectedVersions []string
}

// RequireAll reports whether DELTAFS_REQUIRE_ALL is set to a true value
// ("1", "true", ...): missing prerequisites must then fail tests.
func RequireAll() bool {
	v, err := strconv.ParseBool(os.Getenv(EnvRequireAll))
	return err == nil && v
}

// Skip skips the test with the formatted reason, or fails it when
// RequireAll is true. Use it for any missing prerequisite (a test server,
// node, a tool). Callers must return after it: on a real *testing.T it
// does not return, but a fake testing.TB may.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if RequireAll() {
		t.Fatalf("%s (failing instead of skipping: %s is set)", msg, EnvRequireAll)
		return
	}
	t.Skip(msg)
}

// RepoRoot returns the absolute directory holding go.mod, found by walking
// up from the working directory (go test runs in the package's dir). It
// fails the test when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err == nil {
		var root string
		if root, err = findRepoRoot(wd); err == nil {
			return root
		}
	}
	t.Fatalf("testenv: find repo root: %v", err)
	return ""
}

// findRepoRoot returns the first ancestor of dir (dir included) that holds
// a go.mod file.
func findRepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !fi.IsDir() {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or any parent", dir)
		}
	}
}

// Fixtures returns the absolute fixtures directory: $DELTAFS_FIXTURES when
// set, else ../shared/fixtures/delta relative to the repo root. When the
// directory does not exist it skips (or fails, see RequireAll) the test with
// a message naming the path.
func Fixtures(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvFixtures)
	if dir == "" {
		root := RepoRoot(t)
		if root == "" {
			return ""
		}
		dir = filepath.Join(root, relFixtures)
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(dir); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		Skip(t, "Delta fixtures not found at %s (%v); set %s to their dir", dir, err, EnvFixtures)
		return ""
	}
	return dir
}

// FixtureRoot returns the dir of one fixture (holding table/, expected/ and
// FIXTURE.json), e.g. FixtureRoot(t, "dat/basic_append"). A fixture missing
// from a present fixtures dir is a bug in the test: it fails.
func FixtureRoot(t testing.TB, name string) string {
	t.Helper()
	base := Fixtures(t)
	if base == "" {
		return ""
	}
	dir := filepath.Join(base, filepath.FromSlash(name))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("testenv: fixture %q not found at %s", name, dir)
		return ""
	}
	return dir
}

// Fixture returns the table root (the table/ dir, holding _delta_log/) of
// the named fixture, e.g. Fixture(t, "dat/basic_append").
func Fixture(t testing.TB, name string) string {
	t.Helper()
	root := FixtureRoot(t, name)
	if root == "" {
		return ""
	}
	return filepath.Join(root, "table")
}

// Expected returns the dir of a fixture's expected content at version
// ("latest", "v0", ...), skipping or failing like Fixtures when it is absent.
func Expected(t testing.TB, name, version string) string {
	t.Helper()
	root := FixtureRoot(t, name)
	if root == "" {
		return ""
	}
	dir := filepath.Join(root, "expected", version)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("testenv: fixture %q has no expected/%s: %v", name, version, err)
		return ""
	}
	return dir
}

// Index returns every fixture listed in INDEX.tsv, in file order.
func Index(t testing.TB) []FixtureInfo {
	t.Helper()
	base := Fixtures(t)
	if base == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(base, "INDEX.tsv"))
	if err != nil {
		t.Fatalf("testenv: %v", err)
		return nil
	}
	defer f.Close()
	infos, err := parseIndex(f)
	if err != nil {
		t.Fatalf("testenv: parse %s: %v", f.Name(), err)
		return nil
	}
	return infos
}

// parseIndex parses INDEX.tsv: a '#' header, then one tab-separated line
// per fixture: name, latest version, comma-separated expected versions.
func parseIndex(r io.Reader) ([]FixtureInfo, error) {
	var infos []FixtureInfo
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			return nil, fmt.Errorf("line %d: want 3 tab-separated columns, got %d", n, len(cols))
		}
		v, err := parseVersion(cols[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		info := FixtureInfo{Name: cols[0], LatestVersion: v}
		if cols[2] != "-" && cols[2] != "" {
			info.ExpectedVersions = strings.Split(cols[2], ",")
		}
		infos = append(infos, info)
	}
	return infos, sc.Err()
}

// parseVersion parses a latest-version column: a non-negative integer, or
// "-1"/"None" (no valid table), both returned as -1.
func parseVersion(s string) (int, error) {
	if s == "None" || s == "-1" {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad latest version %q", s)
	}
	return v, nil
}

// LoadFixtureJSON returns the decoded FIXTURE.json of the named fixture.
// Numbers decode as float64, as with encoding/json's defaults.
func LoadFixtureJSON(t testing.TB, name string) map[string]any {
	t.Helper()
	root := FixtureRoot(t, name)
	if root == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(root, "FIXTURE.json"))
	if err != nil {
		t.Fatalf("testenv: %v", err)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("testenv: decode FIXTURE.json of %s: %v", name, err)
		return nil
	}
	return m
}

// RequireFUSE skips (or fails, see RequireAll) the test unless a FUSE
// mount can be made: /dev/fuse exists, and we are root or fusermount3 is
// on PATH.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		Skip(t, "FUSE unavailable: %v", err)
		return
	}
	if os.Geteuid() == 0 {
		return
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		Skip(t, "FUSE unavailable: not root and fusermount3 is not on PATH (install fuse3)")
	}
}

// CopyFixture copies fixture name's table/ dir into a fresh temp dir, as
// <tmp>/<last element of name>, and returns the copy's root: tests that
// write (appends, damage) work on copies, never on the shared fixtures.
func CopyFixture(t testing.TB, name string) string {
	t.Helper()
	src := Fixture(t, name)
	dst := filepath.Join(t.TempDir(), filepath.Base(name))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy fixture %s: %v", name, err)
	}
	return dst
}
