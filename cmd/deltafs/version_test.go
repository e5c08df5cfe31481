package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// The values make dist links in are what --version prints.
func TestVersionFromLinkerFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "deltafs")
	ldflags := "-X main.version=1.2.3+git4.gabc -X main.commit=0123abcd -X main.buildDate=2026-12-01T10:00:00Z"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deltafs 1.2.3+git4.gabc\n", "commit:  0123abcd\n", "built:   2026-12-01T10:00:00Z\n", "go:      go"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--version printed %q, want a line %q", out, want)
		}
	}
}

// Without linker flags the version is Go's build info or "devel", never
// empty, and the first line is "deltafs VERSION".
func TestVersionWithoutLinkerFlags(t *testing.T) {
	out, stderr, code := deltafs(t, "--version")
	if code != 0 || !regexp.MustCompile(`^deltafs (devel|v\S+)\n`).MatchString(out) {
		t.Errorf("--version: exit %d, %q %q", code, out, stderr)
	}
}

// The man page holds the top-level usage and, for each command, its usage
// line as a subsection and one tagged paragraph per flag its --help lists.
func TestManPageFollowsTheHelp(t *testing.T) {
	page, err := manPage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(page, ".TH DELTAFS 1 ") || !strings.Contains(page, "mount.fuse.deltafs") {
		t.Errorf("man page header: %.200q", page)
	}
	sections := strings.Split(page, "\n.SS ")[1:]
	if len(sections) != len(commands) {
		t.Fatalf("%d command sections, want %d", len(sections), len(commands))
	}
	for i, c := range commands {
		help, err := commandHelp(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		sec, _, _ := strings.Cut(sections[i], "\n.SH ")
		if !strings.HasPrefix(sec, `"deltafs `+c.name+" ") {
			t.Errorf("section %d starts %.40q, want deltafs %s", i, sec, c.name)
		}
		for _, line := range strings.Split(help, "\n") {
			if !strings.HasPrefix(line, "  --") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			if !strings.Contains(sec, ".TP\n\\fB"+roffEscape(name)+`\fR`) {
				t.Errorf("%s: flag %s not in the man page", c.name, name)
			}
		}
		if strings.Count(sec, ".TP\n") != strings.Count(help, "\n  --") {
			t.Errorf("%s: %d flags in the man page, %d in --help", c.name, strings.Count(sec, ".TP\n"), strings.Count(help, "\n  --"))
		}
	}
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, ".") && !regexp.MustCompile(`^\.(TH|SH|SS|TP|PP|nf|fi|B|I|BR|br)( |$)`).MatchString(line) {
			t.Errorf("text line read as a roff request: %q", line)
		}
	}
}

// make build stamps the commit (and a version) as make dist does, so a
// binary built from a checkout says which one it is.
func TestMakeBuildStampsCommit(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "%s not installed", tool)
			return
		}
	}
	root := testenv.RepoRoot(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		testenv.Skip(t, "not a git checkout: %v", err)
		return
	}
	bin := filepath.Join(t.TempDir(), "deltafs")
	if out, err := exec.Command("make", "-s", "-C", root, "build", "BUILD_OUT="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "commit:  "+strings.TrimSpace(string(head))) || strings.HasPrefix(string(out), "deltafs devel") {
		t.Errorf("make build's --version:\n%s\nwant a version and the commit %s", out, head)
	}
}

// The man page footer keeps the version and the date apart: the source
// fits left of the centred date on an 80-column page.
func TestManFooterVersionAndDateApart(t *testing.T) {
	for _, v := range []versionInfo{
		{Version: "0.0.0~git20261201112532.g1a2b3c4d5e6.dirty", Commit: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d-dirty"},
		{Version: "1.2.0+git3.g1a2b3c4", Commit: "1a2b3c4"},
		{Version: "v0.0.0-20261201112532-1a2b3c4d5e6f"},
	} {
		s := manSource(v)
		if len(s) > manSourceMax || !strings.HasPrefix(s, "deltafs ") {
			t.Errorf("footer source of %q: %q (%d chars), want at most %d", v.Version, s, len(s), manSourceMax)
		}
	}
	if got := manSource(versionInfo{Version: "1.2.0"}); got != "deltafs 1.2.0" {
		t.Errorf("footer source of 1.2.0: %q", got)
	}
}
