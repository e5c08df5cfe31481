package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deltafs-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "deltafs")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func deltafs(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestLsJSONCountsLiveRowsPerVersion(t *testing.T) {
	table := testenv.Fixture(t, "delta-kernel-rs/golden-dv-partitioned-with-checkpoint")
	for spec, want := range map[string]float64{"": 35, "@latest": 35} {
		out, errOut, code := deltafs(t, "ls", table+spec, "--json")
		if code != 0 {
			t.Fatalf("ls%s: exit %d: %s", spec, code, errOut)
		}
		var rows, deleted float64
		lines := jsonLines(t, out)
		for _, l := range lines {
			rows += l["rows"].(float64)
			deleted += l["deletedRows"].(float64)
			if l["numRecords"].(float64)-l["deletedRows"].(float64) != l["rows"].(float64) {
				t.Errorf("rows != numRecords - deletedRows in %v", l)
			}
			if _, ok := l["partitionValues"].(map[string]any)["part"]; !ok {
				t.Errorf("no logical partition value in %v", l)
			}
		}
		if len(lines) != 15 || rows != want || deleted == 0 {
			t.Errorf("ls%s: %d files, %v rows, %v deleted; want 15 files, %v rows, some deleted", spec, len(lines), rows, deleted, want)
		}
	}
}

func TestLsOldVersionAndText(t *testing.T) {
	table := testenv.Fixture(t, "dat/basic_append")
	out, errOut, code := deltafs(t, "ls", table+"@v0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows float64
	for _, l := range jsonLines(t, out) {
		rows += l["rows"].(float64)
	}
	if rows != 3 {
		t.Errorf("v0 has %v rows, want 3", rows)
	}
	out, _, code = deltafs(t, "ls", table)
	if code != 0 || !strings.Contains(out, "version 1: 2 files, 5 rows") || !strings.HasPrefix(strings.TrimSpace(out), "SIZE") {
		t.Errorf("text ls: exit %d, output %q", code, out)
	}
}

func TestHistoryJSON(t *testing.T) {
	table := testenv.Fixture(t, "dat/multi_partitioned")
	out, errOut, code := deltafs(t, "history", table, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := jsonLines(t, out)
	if len(lines) != 3 {
		t.Fatalf("%d history lines, want 3", len(lines))
	}
	for i, l := range lines {
		if l["version"].(float64) != float64(i) || l["operation"] == "" || l["timestamp"] == nil {
			t.Errorf("line %d: %v", i, l)
		}
	}
}

func TestErrorsNameTableAndCause(t *testing.T) {
	fx := testenv.Fixtures(t)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"ls", filepath.Join(fx, "delta-rs/simple_table_features/table")}, []string{"simple_table_features", "blahabl"}},
		{[]string{"ls", filepath.Join(fx, "dat/basic_append/table") + "@v9"}, []string{"basic_append/table: version 9 not found (latest is 1)"}},
		{[]string{"ls", filepath.Join(fx, "dat/basic_append/table") + "@yesterday"}, []string{"yesterday"}},
		{[]string{"ls", filepath.Join(fx, "delta-kernel-rs/golden-no-delta-log-folder/table")}, []string{"golden-no-delta-log-folder", "not a Delta table"}},
		{[]string{"history", "/nonexistent/table"}, []string{"/nonexistent/table"}},
	}
	for _, c := range cases {
		_, errOut, code := deltafs(t, c.args...)
		if code == 0 {
			t.Errorf("%v: exit 0, want failure", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q does not mention %q", c.args, errOut, w)
			}
		}
	}
}

// Help asked for goes to stdout with exit 0; a bad flag prints it to
// stderr and fails.
func TestHelpToStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"mount", "--help"}, {"unmount", "-h"}, {"ls", "--help"}, {"history", "-help"}, {"append", "--help"}, {"demo", "--help"}} {
		out, errOut, code := deltafs(t, args...)
		if code != 0 || !strings.Contains(out, "Usage") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %d bytes (Usage: %v), stderr %q; want help on stdout, exit 0", args, code, len(out), strings.Contains(out, "Usage"), errOut)
		}
	}
	out, errOut, code := deltafs(t, "ls", "--no-such-flag")
	if code == 0 || out != "" || !strings.Contains(errOut, "no-such-flag") || !strings.Contains(errOut, "Usage") {
		t.Errorf("bad flag: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Wrong arguments say what is wrong before the usage.
func TestUsageSaysWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ls"}, "want one table URL"},
		{[]string{"history"}, "want one table URL"},
		{[]string{"append", "/t"}, "at least one FILE"},
		{[]string{"mount"}, "want SOURCE... MOUNTPOINT"},
		{[]string{"unmount"}, "want one MOUNTPOINT"},
	} {
		_, errOut, code := deltafs(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "Usage") {
			t.Errorf("%v: exit %d, stderr %q; want %q and the usage", c.args, code, errOut, c.want)
		}
	}
}
