package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// workWords are words about how the project was worked on rather than
// what it does: a work session or stop, a tracker item given as the
// reason for code. A comment or a doc describes the behaviour instead;
// the history is in git. Upstream trackers are cited with their name
// and a '#' ("parquet-go issue #608").
var workWords = regexp.MustCompile(`(?i)\bstop \d+|\bsessions? \d+|\b(this|that|first|later|earlier|previous|next|last) session\b|(^|[^\w#-])issues? \d+\b|\bhelpers? \d+\b`)

// The docs, comments and test names of the repository speak of the
// project, never of the work on it.
func TestRepositorySpeaksOfItself(t *testing.T) {
	root := testenv.RepoRoot(t)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "out" || name == "demo" || name == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".sh", ".yaml", ".yml", ".service":
		default:
			if name != "Makefile" {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := workWords.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: %q speaks of the work, not the project: %s", rel, i+1, strings.TrimSpace(m), strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The README's layout names every directory of the module that holds a
// package, down to delta/'s and internal/'s subdirectories.
func TestReadmeLayoutIsComplete(t *testing.T) {
	root := testenv.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "## Layout")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	for _, sub := range []string{"delta", "internal"} {
		more, _ := filepath.Glob(filepath.Join(root, sub, "*"))
		dirs = append(dirs, more...)
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || strings.HasPrefix(filepath.Base(d), ".") {
			continue
		}
		rel, _ := filepath.Rel(root, d)
		switch filepath.Base(rel) {
		case "docs", "demo", "dist", "bin", "node_modules", "testdata":
			continue
		}
		if !strings.Contains(layout, rel+"/") {
			t.Errorf("README.md's layout does not name %s/", rel)
		}
	}
}
