package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Skip and Fatal record instead of stopping
// the goroutine, so the skip-or-fail decisions can be asserted. Anything
// else goes to the real test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper()                         {}
func (r *recorder) Skip(args ...any)                { r.skipped, r.msg = true, fmt.Sprint(args...) }
func (r *recorder) Skipf(f string, args ...any)     { r.skipped, r.msg = true, fmt.Sprintf(f, args...) }
func (r *recorder) Fatal(args ...any)               { r.failed, r.msg = true, fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any)    { r.failed, r.msg = true, fmt.Sprintf(f, args...) }
func (r *recorder) outcome() (skipped, failed bool) { return r.skipped, r.failed }

func TestRequireAll(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
	}{{"", false}, {"0", false}, {"false", false}, {"junk", false}, {"1", true}, {"true", true}} {
		t.Setenv(EnvRequireAll, tc.val)
		if got := RequireAll(); got != tc.want {
			t.Errorf("%s=%q: RequireAll() = %v, want %v", EnvRequireAll, tc.val, got, tc.want)
		}
	}
}

func TestSkipOrFail(t *testing.T) {
	for _, tc := range []struct {
		requireAll         string
		wantSkip, wantFail bool
	}{{"", true, false}, {"1", false, true}} {
		t.Setenv(EnvRequireAll, tc.requireAll)
		r := &recorder{TB: t}
		Skip(r, "server %s missing", "versitygw")
		if s, f := r.outcome(); s != tc.wantSkip || f != tc.wantFail {
			t.Errorf("REQUIRE_ALL=%q: skipped=%v failed=%v, want %v %v", tc.requireAll, s, f, tc.wantSkip, tc.wantFail)
		}
		if !strings.Contains(r.msg, "server versitygw missing") {
			t.Errorf("message %q does not carry the reason", r.msg)
		}
	}
}

func TestFindRepoRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, deep} {
		got, err := findRepoRoot(dir)
		if err != nil || got != root {
			t.Errorf("findRepoRoot(%s) = %q, %v; want %q", dir, got, err, root)
		}
	}
	// A go.mod directory is not a go.mod file; no file up to / is an error.
	bare := filepath.Join(t.TempDir(), "go.mod")
	if err := os.Mkdir(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findRepoRoot(bare); err == nil {
		t.Errorf("findRepoRoot(%s) = %q, want an error", bare, got)
	}
}

func TestRepoRootIsThisModule(t *testing.T) {
	root := RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "module github.com/deltafs/deltafs\n") {
		t.Errorf("RepoRoot = %s, whose go.mod is not deltafs's", root)
	}
	if wd, _ := os.Getwd(); filepath.Join(root, "internal", "testkit", "testenv") != wd {
		t.Errorf("RepoRoot = %s, not three levels above the package dir %s", root, wd)
	}
}

func TestParseIndex(t *testing.T) {
	good := "# fixture\tlatest_version\texpected_versions\n" +
		"dat/basic_append\t1\tlatest,v0,v1\n" +
		"delta-kernel-rs/crc-malformed\t-1\t-\n" +
		"delta-kernel-rs/golden-no-delta-log-folder\tNone\t-\n" +
		"\n" +
		"delta-rs/big\t108\tlatest\r\n"
	want := []FixtureInfo{
		{"dat/basic_append", 1, []string{"latest", "v0", "v1"}},
		{"delta-kernel-rs/crc-malformed", -1, nil},
		{"delta-kernel-rs/golden-no-delta-log-folder", -1, nil},
		{"delta-rs/big", 108, []string{"latest"}},
	}
	got, err := parseIndex(strings.NewReader(good))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseIndex = %+v, %v\nwant %+v", got, err, want)
	}
	for _, bad := range []string{
		"a\t1\n",          // two columns
		"a\t1\tlatest\tx", // four columns
		"a\tone\t-",       // not a number
		"a\t-2\t-",        // negative
	} {
		if got, err := parseIndex(strings.NewReader(bad)); err == nil {
			t.Errorf("parseIndex(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestFixturesMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	t.Setenv(EnvFixtures, missing)
	for _, tc := range []struct {
		requireAll         string
		wantSkip, wantFail bool
	}{{"", true, false}, {"1", false, true}} {
		t.Setenv(EnvRequireAll, tc.requireAll)
		r := &recorder{TB: t}
		got := Fixtures(r)
		if s, f := r.outcome(); got != "" || s != tc.wantSkip || f != tc.wantFail {
			t.Errorf("REQUIRE_ALL=%q: Fixtures = %q skipped=%v failed=%v", tc.requireAll, got, s, f)
		}
		if !strings.Contains(r.msg, missing) {
			t.Errorf("message %q does not name the path %s", r.msg, missing)
		}
	}
}

func TestFixturesEnvOverride(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvFixtures, dir)
	if got := Fixtures(t); got != dir {
		t.Errorf("Fixtures = %q, want %q", got, dir)
	}
	r := &recorder{TB: t}
	if got := Fixture(r, "dat/absent"); got != "" || !r.failed {
		t.Errorf("Fixture of an absent name = %q, failed=%v; want a failure", got, r.failed)
	}
}

func TestFixturesDefaultPath(t *testing.T) {
	t.Setenv(EnvFixtures, "")
	dir := Fixtures(t)
	want := filepath.Join(filepath.Dir(RepoRoot(t)), "shared", "fixtures", "delta")
	if dir != want {
		t.Errorf("Fixtures = %q, want %q", dir, want)
	}
}

func TestIndexMatchesFixtures(t *testing.T) {
	infos := Index(t)
	if len(infos) < 200 {
		t.Fatalf("Index has %d fixtures, want the ~244 of INDEX.tsv", len(infos))
	}
	byName := map[string]FixtureInfo{}
	for _, fi := range infos {
		byName[fi.Name] = fi
		checkAgainstJSON(t, fi)
	}
	for name, latest := range map[string]int{
		"dat/basic_append":                           1,
		"delta-kernel-rs/crc-malformed":              -1,
		"delta-kernel-rs/golden-no-delta-log-folder": -1,
	} {
		if fi, ok := byName[name]; !ok || fi.LatestVersion != latest {
			t.Errorf("Index[%s] = %+v (present %v), want latest %d", name, fi, ok, latest)
		}
	}
	if _, err := os.Stat(filepath.Join(Fixture(t, "dat/basic_append"), "_delta_log")); err != nil {
		t.Errorf("Fixture(dat/basic_append) has no _delta_log: %v", err)
	}
	if dir := Expected(t, "dat/basic_append", "v1"); !strings.HasSuffix(dir, "basic_append/expected/v1") {
		t.Errorf("Expected(dat/basic_append, v1) = %s", dir)
	}
}

// checkAgainstJSON checks one INDEX.tsv line against its FIXTURE.json.
func checkAgainstJSON(t *testing.T, fi FixtureInfo) {
	t.Helper()
	if _, err := os.Stat(Fixture(t, fi.Name)); err != nil {
		t.Errorf("%s: %v", fi.Name, err)
	}
	j := LoadFixtureJSON(t, fi.Name)
	want := -1
	if v, ok := j["latest_version"].(float64); ok && v >= 0 {
		want = int(v)
	}
	if fi.LatestVersion != want {
		t.Errorf("%s: Index latest %d, FIXTURE.json %v", fi.Name, fi.LatestVersion, j["latest_version"])
	}
	var exp []string
	if m, ok := j["expected"].(map[string]any); ok {
		for k := range m {
			exp = append(exp, k)
		}
	}
	got := slices.Clone(fi.ExpectedVersions)
	slices.Sort(got)
	slices.Sort(exp)
	if !slices.Equal(got, exp) {
		t.Errorf("%s: Index expected %v, FIXTURE.json %v", fi.Name, got, exp)
	}
}

func TestRequireFUSE(t *testing.T) {
	t.Setenv(EnvRequireAll, "")
	r := &recorder{TB: t}
	RequireFUSE(r)
	_, devErr := os.Stat("/dev/fuse")
	usable := devErr == nil && os.Geteuid() == 0
	if s, f := r.outcome(); f || (usable && s) {
		t.Errorf("RequireFUSE: skipped=%v failed=%v on a machine with /dev/fuse=%v euid=%d",
			s, f, devErr == nil, os.Geteuid())
	}
	if devErr != nil && !strings.Contains(r.msg, "FUSE unavailable") {
		t.Errorf("without /dev/fuse, message %q does not say FUSE is unavailable", r.msg)
	}
}

func TestTool(t *testing.T) {
	t.Setenv(EnvRequireAll, "")
	if p := Tool(t, "sh"); !filepath.IsAbs(p) {
		t.Errorf("Tool(sh) = %q, want an absolute path", p)
	}
	r := &recorder{TB: t}
	if p := Tool(r, "deltafs-no-such-tool"); p != "" || !r.skipped || !strings.Contains(r.msg, "make tools") {
		t.Errorf("Tool(absent) = %q skipped=%v msg=%q; want a skip naming make tools", p, r.skipped, r.msg)
	}
	r = &recorder{TB: t}
	if d := NodeDir(r, "deltafs-no-such-npm-package"); d != "" || !r.skipped {
		t.Errorf("NodeDir(absent) = %q skipped=%v; want a skip", d, r.skipped)
	}
}
