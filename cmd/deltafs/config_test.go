package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/mount"
)

// writeConfig writes a config file into a temp dir and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mount.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// resolveArgs parses mount arguments as runMount does, without mounting.
func resolveArgs(t *testing.T, args ...string) (mount.Config, *mountFlags, error) {
	t.Helper()
	flags := newFlags("mount", "", "")
	var f mountFlags
	f.define(flags)
	pos, err := parseFlags(flags, args)
	if err != nil {
		return mount.Config{}, nil, err
	}
	cfg, err := f.resolve(flags, pos)
	return cfg, &f, err
}

const fullConfig = `# every kind of entry
mountpoint: /mnt/delta
tables:
  - name: orders
    url: s3://bucket/orders?region=eu-west-1
  - url: /data/warehouse
  - sales=gs://bucket/sales
read-only: true
allow-other: true
cache-dir: /var/cache/x
cache-size: 50G
refresh: 5s
log-level: debug
log-file: /var/log/deltafs.log
metrics-addr: 127.0.0.1:9464
uid: 1000
gid: 1001
xattrs: true
no-passthrough: true
`

func TestConfigFileParsed(t *testing.T) {
	p := writeConfig(t, fullConfig)
	cfg, f, err := resolveArgs(t, "--config", p)
	if err != nil {
		t.Fatal(err)
	}
	wantSources := []mount.Source{
		{Name: "orders", URL: "s3://bucket/orders?region=eu-west-1"},
		{URL: "/data/warehouse"},
		{Name: "sales", URL: "gs://bucket/sales"},
	}
	if !reflect.DeepEqual(cfg.Sources, wantSources) {
		t.Errorf("sources %+v, want %+v", cfg.Sources, wantSources)
	}
	if cfg.Mountpoint != "/mnt/delta" || !cfg.ReadOnly || !cfg.AllowOther || cfg.CacheDir != "/var/cache/x" ||
		cfg.CacheSize != 50<<30 || cfg.Refresh != 5*time.Second || cfg.UID != 1000 || cfg.GID != 1001 ||
		!cfg.XAttrs || !cfg.NoPassthrough {
		t.Errorf("config %+v", cfg)
	}
	if f.logLevel != "debug" || f.logFile != "/var/log/deltafs.log" || f.metricsAddr != "127.0.0.1:9464" {
		t.Errorf("flags: log-level %q log-file %q metrics-addr %q", f.logLevel, f.logFile, f.metricsAddr)
	}
}

func TestConfigPrecedence(t *testing.T) {
	p := writeConfig(t, fullConfig)
	cases := []struct {
		name  string
		args  []string
		check func(mount.Config, *mountFlags) string
	}{
		{"flag overrides file", []string{"--config", p, "--cache-size", "1G", "--read-only=false"}, func(c mount.Config, _ *mountFlags) string {
			if c.CacheSize != 1<<30 || c.ReadOnly {
				return "cache-size/read-only from the file"
			}
			return ""
		}},
		{"flag after args overrides file", []string{"--config", p, "/elsewhere", "--refresh", "2s"}, func(c mount.Config, _ *mountFlags) string {
			if c.Refresh != 2*time.Second || c.Mountpoint != "/elsewhere" || len(c.Sources) != 3 {
				return "want refresh 2s, mountpoint /elsewhere, the file's 3 tables"
			}
			return ""
		}},
		{"args replace tables", []string{"--config", p, "a=/x", "/y", "/mnt/z"}, func(c mount.Config, _ *mountFlags) string {
			want := []mount.Source{{Name: "a", URL: "/x"}, {URL: "/y"}}
			if !reflect.DeepEqual(c.Sources, want) || c.Mountpoint != "/mnt/z" {
				return "want the command line's sources and mountpoint"
			}
			return ""
		}},
		{"unset flags keep the file", []string{"--config", p, "--debug"}, func(c mount.Config, f *mountFlags) string {
			if !c.Debug || c.UID != 1000 || f.metricsAddr != "127.0.0.1:9464" {
				return "file settings lost"
			}
			return ""
		}},
	}
	for _, c := range cases {
		cfg, f, err := resolveArgs(t, c.args...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if msg := c.check(cfg, f); msg != "" {
			t.Errorf("%s: %s: %+v", c.name, msg, cfg)
		}
	}
}

func TestConfigErrorsNameLineAndField(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "mountpoint: /m\ntables: [/t]\ncache_size: 1G\n", []string{":3:", `unknown setting "cache_size"`, "cache-size"}},
		{"bad size", "mountpoint: /m\ntables: [/t]\n\ncache-size: lots\n", []string{":4:", "cache-size", `bad size "lots"`}},
		{"bad duration", "mountpoint: /m\ntables: [/t]\nrefresh: soon\n", []string{":3:", "refresh", "soon"}},
		{"bad bool", "mountpoint: /m\ntables: [/t]\nread-only: maybe\n", []string{":3:", "read-only"}},
		{"bad level", "tables: [/t]\nmountpoint: /m\nlog-level: loud\n", []string{":3:", "log-level", "loud"}},
		{"table without url", "mountpoint: /m\ntables:\n  - name: x\n", []string{":3:", "without url"}},
		{"table unknown field", "mountpoint: /m\ntables:\n  - {name: x, path: /t}\n", []string{":3:", `unknown field "path"`}},
		{"tables not a list", "mountpoint: /m\ntables: /t\n", []string{":2:", "tables: want a list"}},
		{"list value for a flag", "mountpoint: /m\ntables: [/t]\nuid: [1, 2]\n", []string{":3:", "uid: want a single value"}},
		{"not a mapping", "- a\n- b\n", []string{":1:", "mapping"}},
		{"yaml syntax", "mountpoint: /m\ntables: [/t\n", []string{"mount.yaml", "yaml"}},
		{"nested config", "config: other.yaml\n", []string{":1:", "cannot include"}},
	}
	for _, c := range cases {
		p := writeConfig(t, c.text)
		_, _, err := resolveArgs(t, "--config", p)
		if !errors.Is(err, errConfig) {
			t.Errorf("%s: err %v, want errConfig", c.name, err)
			continue
		}
		for _, w := range append(c.want, p) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.name, err, w)
			}
		}
	}
}

func TestConfigMissingPieces(t *testing.T) {
	p := writeConfig(t, "read-only: true\n")
	if _, _, err := resolveArgs(t, "--config", p); !errors.Is(err, errUsage) {
		t.Errorf("no tables or mountpoint: %v, want a usage error", err)
	}
	if _, _, err := resolveArgs(t, "--config", p, "/t", "/m"); err != nil {
		t.Errorf("tables and mountpoint from the command line: %v", err)
	}
	if _, _, err := resolveArgs(t, "--config", "/nonexistent/x.yaml"); err == nil || !strings.Contains(err.Error(), "/nonexistent/x.yaml") {
		t.Errorf("missing file: %v", err)
	}
}
