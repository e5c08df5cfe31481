package main

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Every relative link of a doc the .deb installs, and every file:// link
// of the systemd unit, points to a file the .deb installs.
func TestInstalledDocLinks(t *testing.T) {
	root := testenv.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "contrib", "deb", "nfpm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Contents []struct{ Src, Dst, Type string }
	}
	if err := yaml.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	installed := map[string]string{} // dst -> src in the repository
	for _, c := range pkg.Contents {
		if c.Type == "" {
			installed[c.Dst] = c.Src
		}
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)`)
	docs := 0
	for dst, src := range installed {
		if !strings.HasSuffix(dst, ".md") {
			continue
		}
		docs++
		text, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, ok := installed[path.Join(path.Dir(dst), target)]; !ok {
				t.Errorf("%s (installed as %s) links %s, which the .deb does not install", src, dst, target)
			}
		}
	}
	if docs == 0 {
		t.Fatal("the .deb installs no doc")
	}
	unit, err := os.ReadFile(filepath.Join(root, "contrib", "systemd", "deltafs@.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`file://(\S+)`).FindAllStringSubmatch(string(unit), -1) {
		if _, ok := installed[m[1]]; !ok {
			t.Errorf("deltafs@.service links %s, which the .deb does not install", m[1])
		}
	}
}
