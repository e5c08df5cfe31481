package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// docs/development.md says what `make test` runs: the Makefile's
// TEST_FLAGS, build tags included.
func TestDevelopmentDocStatesTestFlags(t *testing.T) {
	root := testenv.RepoRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TEST_FLAGS\s*\?=\s*(.+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no TEST_FLAGS")
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "go test " + strings.TrimSpace(string(m[1])) + " ./..."
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/development.md does not say `make test` runs %q", want)
	}
}
