package integration

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

const module = "github.com/deltafs/deltafs"

// durable is the leaf package of file system durability (SyncDir) that
// every writer of files shares.
const durable = "internal/durable"

// Import path prefixes of outside modules some layers must not know.
const (
	goFuse  = "github.com/hanwen/go-fuse"
	goCloud = "gocloud.dev"
)

// layerRule says what the packages of one layer (a package and its
// subpackages, relative to the module) may import, transitively, from this
// module and which outside modules they must not reach. A layer may always
// import its own subtree.
type layerRule struct {
	layer     string
	mayImport []string // layers of ours allowed (with their subtrees); nil: none
	direct    []string // when set, the layers of ours it may import directly (the others only through them)
	anything  bool     // any package of ours is allowed
	forbidden []string // outside import path prefixes never allowed
	except    []string // subtrees of this layer exempt from forbidden
}

// layerRules are the package arrows of docs/conventions.md. The first rule
// whose layer holds a package applies; packages of no layer are unchecked.
var layerRules = []layerRule{
	{layer: "cmd/deltafs", anything: true},
	{layer: "integration", anything: true},
	// csi is a front end: it reaches mounts only through the Mounter that
	// cmd/deltafs gives it (one `deltafs mount` process per volume).
	{layer: "csi", forbidden: []string{goFuse, goCloud}},
	{layer: "mount", mayImport: []string{"nodes", "inbox", "nfsfront", "serve", "blobcache", "writeback", "delta", "pqfile", durable}},
	// nfsfront translates NFS requests into the FUSE requests of the one
	// tree (go-fuse's RawFileSystem): it knows no rule of the tree.
	{layer: "nfsfront", forbidden: []string{goCloud}},
	// The inbox is a part of the tree built on what nodes exports (its
	// Env, attributes, errno choice); nodes never reaches back into it.
	{layer: "inbox", mayImport: []string{"nodes", "delta", "serve", "pqfile", "blobcache", durable}, direct: []string{"nodes", "delta"}, forbidden: []string{goCloud}},
	{layer: "nodes", mayImport: []string{"delta", "serve", "pqfile", "blobcache", durable}, direct: []string{"delta", "serve"}, forbidden: []string{goCloud}},
	{layer: "serve", mayImport: []string{"delta", "pqfile", "blobcache", durable}, forbidden: []string{goFuse, goCloud}},
	{layer: "writeback", mayImport: []string{"delta", "pqfile", durable}, forbidden: []string{goFuse}},
	// The log's vocabulary is a leaf, and the checkpoint codec knows it
	// and Parquet, nothing of the log engine that uses it.
	{layer: "delta/action", forbidden: []string{goFuse, goCloud}},
	{layer: "delta/checkpoint", mayImport: []string{"delta/action", "pqfile"}, forbidden: []string{goFuse, goCloud}},
	{layer: "delta", mayImport: []string{"pqfile", durable}, forbidden: []string{goFuse, goCloud}, except: []string{"delta/blobstore"}},
	{layer: "pqfile", forbidden: []string{goFuse, goCloud}},
	{layer: "blobcache", mayImport: []string{durable}, forbidden: []string{goFuse}},
	{layer: durable},
	{layer: "internal/sample", mayImport: []string{"delta", "pqfile"}, forbidden: []string{goFuse}},
	{layer: testkit, anything: true},
}

// in reports whether rel (a path relative to the module) is layer or below it.
func in(rel, layer string) bool {
	return rel == layer || strings.HasPrefix(rel, layer+"/")
}

// ruleFor returns the rule of the layer holding rel, or nil.
func ruleFor(rel string) *layerRule {
	for i := range layerRules {
		if in(rel, layerRules[i].layer) {
			return &layerRules[i]
		}
	}
	return nil
}

// testkit holds the packages for tests and benchmarks only (testenv,
// scalegen, faultstore, powerfs, hostilepq, fixturecheck): only tests,
// benchmark harnesses (bench/) and each other may import them, so that no
// package of the program links a test helper.
const testkit = "internal/testkit"

// isTestHelper reports whether rel is a test helper's package.
func isTestHelper(rel string) bool { return in(rel, testkit) }

// mayUseTestHelpers reports whether rel may import a test helper: the
// helpers themselves, the integration tests and the benchmark harnesses.
func mayUseTestHelpers(rel string) bool {
	return isTestHelper(rel) || in(rel, "integration") || in(rel, "bench")
}

// violations returns one message per forbidden arrow from pkg (an import
// path) to its transitive non-test dependencies deps.
func violations(pkg string, deps []string) []string { return violationsDirect(pkg, deps, nil) }

// violationsDirect is violations with pkg's direct imports too, for the
// rules that limit them.
func violationsDirect(pkg string, deps, imports []string) []string {
	rel, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return nil
	}
	var out []string
	for _, dep := range deps {
		d := strings.TrimPrefix(dep, module+"/")
		if isTestHelper(d) && !mayUseTestHelpers(rel) {
			out = append(out, fmt.Sprintf("%s -> %s: only tests may import %s", rel, d, d))
		}
	}
	r := ruleFor(rel)
	if r == nil {
		return out
	}
	for _, dep := range deps {
		if msg := r.check(rel, dep); msg != "" {
			out = append(out, msg)
		}
	}
	for _, imp := range imports {
		depRel, ours := strings.CutPrefix(imp, module+"/")
		if !ours || r.direct == nil || in(depRel, r.layer) || isTestHelper(depRel) {
			continue
		}
		if !slices.ContainsFunc(r.direct, func(l string) bool { return in(depRel, l) }) {
			out = append(out, fmt.Sprintf("%s -> %s: %s may import directly only %v of ours", rel, depRel, r.layer, r.direct))
		}
	}
	return out
}

// check returns a message naming the arrow rel -> dep when the rule forbids
// it, else "".
func (r *layerRule) check(rel, dep string) string {
	if depRel, ours := strings.CutPrefix(dep, module+"/"); ours {
		if r.anything || in(depRel, r.layer) || isTestHelper(depRel) {
			return "" // test helper arrows are reported for every package above
		}
		if !slices.ContainsFunc(r.mayImport, func(l string) bool { return in(depRel, l) }) {
			return fmt.Sprintf("%s -> %s: %s may import only %v of ours", rel, depRel, r.layer, r.mayImport)
		}
		return ""
	}
	if slices.ContainsFunc(r.except, func(l string) bool { return in(rel, l) }) {
		return ""
	}
	for _, f := range r.forbidden {
		if dep == f || strings.HasPrefix(dep, f+"/") {
			return fmt.Sprintf("%s -> %s: %s must not depend on %s", rel, dep, r.layer, f)
		}
	}
	return ""
}

// TestPackageArrows checks every package of the module against layerRules,
// using the transitive imports `go list` reports (test files excluded).
func TestPackageArrows(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}} |{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = testenv.RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderrOf(err))
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		depPart, impPart, _ := strings.Cut(line, "|")
		fields := strings.Fields(depPart)
		if len(fields) == 0 {
			continue
		}
		if ruleFor(strings.TrimPrefix(fields[0], module+"/")) != nil {
			checked++
		}
		for _, msg := range violationsDirect(fields[0], fields[1:], strings.Fields(impPart)) {
			t.Errorf("forbidden import %s (package arrows: shared docs/conventions.md)", msg)
		}
	}
	if checked == 0 {
		t.Fatalf("go list reported no package of %s under a rule:\n%s", module, out)
	}
	t.Logf("checked %d packages", checked)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestArrowRules shows the rules catch each arrow conventions.md forbids,
// and allow the ones it draws.
func TestArrowRules(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	for _, tc := range []struct {
		pkg, dep string
		want     string // substring of the violation, "" for allowed
	}{
		{m("cmd/deltafs"), m("mount"), ""},
		{m("cmd/deltafs"), goFuse + "/v2/fs", ""},
		{m("mount"), m("nodes"), ""},
		{m("mount"), m("serve"), ""},
		{m("mount"), m("delta/blobstore"), ""},
		{m("mount"), m("cmd/deltafs"), "mount -> cmd/deltafs"},
		{m("nodes"), m("delta"), ""},
		{m("nodes"), m("serve"), ""},
		{m("nodes"), goFuse + "/v2/fs", ""},
		{m("nodes"), m("writeback"), "nodes -> writeback"},
		{m("nodes"), m("mount"), "nodes -> mount"},
		{m("nodes"), goCloud + "/blob", "nodes -> gocloud.dev/blob"},
		{m("serve"), m("blobcache"), ""},
		{m("serve"), m("pqfile"), ""},
		{m("serve"), m("nodes"), "serve -> nodes"},
		{m("serve"), goFuse + "/v2/fuse", "serve -> github.com/hanwen/go-fuse/v2/fuse"},
		{m("writeback"), m("delta"), ""},
		{m("writeback"), m("pqfile"), ""},
		{m("writeback"), m("nodes"), "writeback -> nodes"},
		{m("writeback"), goFuse + "/v2/fuse", "writeback -> github.com/hanwen/go-fuse/v2/fuse"},
		{m("delta"), m("delta/internal/x"), ""},
		{m("delta"), m("pqfile"), ""},
		{m("delta"), m("delta/checkpoint"), ""},
		{m("delta/checkpoint"), m("delta/action"), ""},
		{m("delta/checkpoint"), m("pqfile"), ""},
		{m("delta/checkpoint"), m("delta"), "delta/checkpoint -> delta"},
		{m("delta/checkpoint"), m("delta/blobstore"), "delta/checkpoint -> delta/blobstore"},
		{m("delta/action"), m("pqfile"), "delta/action -> pqfile"},
		{m("delta/action"), m("delta"), "delta/action -> delta"},
		{m("delta"), m("blobcache"), "delta -> blobcache"},
		{m("delta"), goFuse + "/v2/fuse", "delta must not depend on github.com/hanwen/go-fuse"},
		{m("delta"), goCloud + "/blob", "delta must not depend on gocloud.dev"},
		{m("delta/dv"), goCloud + "/blob", "delta/dv -> gocloud.dev/blob"},
		{m("delta/blobstore"), goCloud + "/blob", ""},
		{m("delta/blobstore"), m("delta"), ""},
		{m("pqfile"), m("delta"), "pqfile -> delta"},
		{m("pqfile"), goCloud + "/blob", "pqfile -> gocloud.dev/blob"},
		{m("blobcache"), goCloud + "/blob", ""},
		{m("blobcache"), m("delta"), "blobcache -> delta"},
		{m("blobcache"), goFuse + "/v2/fs", "blobcache -> github.com/hanwen/go-fuse/v2/fs"},
		{m("mount"), m("internal/testkit/testenv"), "only tests may import internal/testkit/testenv"},
		{m("delta"), m("internal/testkit/scalegen"), "only tests may import internal/testkit/scalegen"},
		{m("cmd/deltafs"), m("internal/testkit/faultstore"), "only tests may import internal/testkit/faultstore"},
		{m("writeback"), m("internal/testkit/hostilepq"), "only tests may import internal/testkit/hostilepq"},
		{m("bench/scalebench"), m("internal/testkit/scalegen"), ""},
		{m("internal/testkit/fixturecheck"), m("internal/testkit/testenv"), ""},
		{m("cmd/deltafs"), m("internal/sample"), ""},
		{m("internal/sample"), m("delta"), ""},
		{m("internal/sample"), m("mount"), "internal/sample -> mount"},
		{m("writeback"), m("internal/durable"), ""},
		{m("integration"), m("mount"), ""},
		{"example.com/other", m("mount"), ""},
	} {
		got := strings.Join(violations(tc.pkg, []string{tc.dep}), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s -> %s: violations %q, want %q", tc.pkg, tc.dep, got, tc.want)
		}
	}
	// nodes reaches the caches only through serve.
	if got := violationsDirect(m("nodes"), []string{m("blobcache")}, []string{m("blobcache")}); len(got) != 1 || !strings.Contains(got[0], "directly") {
		t.Errorf("nodes importing blobcache directly: violations %q, want one", got)
	}
}
