package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ToolsDir returns the absolute tools dir that `make tools` fills
// (<repo>/.tools), whether or not it exists yet.
func ToolsDir(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	if root == "" {
		return ""
	}
	return filepath.Join(root, ".tools")
}

// Tool returns the absolute path of an executable: .tools/bin/<name> when
// installed there, else <name> found on PATH. When neither exists it skips
// (or fails, see RequireAll) the test, naming the make target to run.
func Tool(t testing.TB, name string) string {
	t.Helper()
	tools := ToolsDir(t)
	if tools == "" {
		return ""
	}
	p := filepath.Join(tools, "bin", name)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	Skip(t, "tool %s not installed in %s/bin nor on PATH (run `make tools` or `make tools-servers`)", name, tools)
	return ""
}

// NodeDir returns the npm prefix dir (.tools/node) after checking that node
// is on PATH and that each npm package in pkgs is installed there. ES
// module imports resolve from the working directory, so run node with
// exec.Cmd.Dir set to the returned dir, e.g. for
// `node --input-type=module -e "import ... from '@duckdb/node-api'"`.
// Executables of the packages are in <dir>/node_modules/.bin.
func NodeDir(t testing.TB, pkgs ...string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		Skip(t, "node not found on PATH (install Node.js 20)")
		return ""
	}
	tools := ToolsDir(t)
	if tools == "" {
		return ""
	}
	dir := filepath.Join(tools, "node")
	for _, pkg := range pkgs {
		pj := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")
		if _, err := os.Stat(pj); err != nil {
			Skip(t, "npm package %s not installed in %s (run `make tools`)", pkg, dir)
			return ""
		}
	}
	return dir
}
