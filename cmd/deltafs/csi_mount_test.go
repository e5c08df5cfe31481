package main

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/deltafs/deltafs/csi"
)

// A volume's attributes are values only: a source spelled as a flag is
// a source of the volume's `deltafs mount`, never one of its flags, so a
// read-only publish stays read-only and no flag the plugin does not give
// reaches the process.
func TestCSIVolumeSourcesAreNeverFlags(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	for _, src := range []string{"--read-only=false", "--log-file=" + filepath.Join(dir, "owned"), "-allow-other=false"} {
		m := &csiMounter{logLevel: "info"}
		args, err := m.mountArgs(&csi.Volume{ID: "v", Target: target, ReadOnly: true, Dir: dir,
			Attributes: map[string]string{"source": src}})
		if err != nil {
			t.Fatal(err)
		}
		cfg, f, err := resolveArgs(t, args...)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if !cfg.ReadOnly || f.logFile != "" || !cfg.AllowOther {
			t.Errorf("source %q: read-only %v, log file %q, allow-other %v; want read-only, no log file, allow-other",
				src, cfg.ReadOnly, f.logFile, cfg.AllowOther)
		}
		if len(cfg.Sources) != 1 || cfg.Sources[0].Name+"="+cfg.Sources[0].URL != src || cfg.Mountpoint != target {
			t.Errorf("source %q: sources %+v, mountpoint %q", src, cfg.Sources, cfg.Mountpoint)
		}
	}
}

// "--" ends the flags: what follows is positional, even when it looks
// like a flag; before it, flags may still follow positional arguments.
func TestParseFlagsDoubleDash(t *testing.T) {
	flags := newFlags("x", "", "")
	ro := flags.Bool("read-only", false, "")
	pos, err := parseFlags(flags, []string{"a", "--read-only", "--", "--read-only=false", "-h"})
	if err != nil || !*ro || !reflect.DeepEqual(pos, []string{"a", "--read-only=false", "-h"}) {
		t.Errorf("parseFlags: %v, read-only %v, %v", pos, *ro, err)
	}
}
