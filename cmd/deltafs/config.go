package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/deltafs/deltafs/mount"
)

// errConfig marks an error in a config file or in fstab options; its
// message names the file and line (or the option) at fault.
var errConfig = errors.New("bad mount configuration")

// mountFile is a parsed `deltafs mount --config FILE`: the tables, the
// mountpoint and the flag settings it holds, with their lines.
type mountFile struct {
	path       string
	mountpoint string
	tables     []mount.Source
	settings   []setting
}

// setting is one "flag-name: value" of a config file (or one fstab -o
// option), to be applied with flag.FlagSet.Set.
type setting struct {
	name, value string
	where       string // "FILE:LINE" or "option NAME", for messages
}

// configExample is shown by `deltafs mount --help`.
const configExample = `# deltafs mount --config /etc/deltafs/mount.yaml
mountpoint: /mnt/delta
tables:
  - name: orders
    url: s3://bucket/warehouse/orders?region=eu-west-1
  - url: /data/warehouse          # a warehouse: every table under it
  - sales=gs://bucket/sales       # [NAME=]URL also works
# any mount flag, by its name:
read-only: true
cache-size: 50G
log-file: /var/log/deltafs/mnt-delta.log
metrics-addr: 127.0.0.1:9464`

// loadMountFile reads a YAML config file. Every key other than
// mountpoint and tables must be the name of a flag of flags; values are
// checked when applied (applySettings).
func loadMountFile(path string, flags *flag.FlagSet) (*mountFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parseMountFile(path, data, flags)
}

// parseMountFile parses data, the content of the config file path.
func parseMountFile(path string, data []byte, flags *flag.FlagSet) (*mountFile, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errConfig, path, err)
	}
	mf := &mountFile{path: path}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: %s: empty file", errConfig, path)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, mf.errorf(root, "the file must be a mapping of settings (mountpoint:, tables:, flags)")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if err := mf.addKey(root.Content[i], root.Content[i+1], flags); err != nil {
			return nil, err
		}
	}
	return mf, nil
}

// errorf returns an errConfig naming the file and n's line.
func (mf *mountFile) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", errConfig, mf.path, n.Line, fmt.Sprintf(format, args...))
}

// addKey records one top-level key and its value.
func (mf *mountFile) addKey(k, v *yaml.Node, flags *flag.FlagSet) error {
	switch k.Value {
	case "tables":
		return mf.addTables(v)
	case "mountpoint":
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			return mf.errorf(v, "mountpoint: want a directory path")
		}
		mf.mountpoint = v.Value
		return nil
	case "config":
		return mf.errorf(k, "config: a config file cannot include another")
	}
	if flags.Lookup(k.Value) == nil {
		return mf.errorf(k, "unknown setting %q (want mountpoint, tables or a mount flag: %s)", k.Value, flagNames(flags))
	}
	if v.Kind != yaml.ScalarNode {
		return mf.errorf(v, "%s: want a single value", k.Value)
	}
	mf.settings = append(mf.settings, setting{name: k.Value, value: v.Value, where: fmt.Sprintf("%s:%d", mf.path, v.Line)})
	return nil
}

// addTables records the tables: a list of {name, url} or "[NAME=]URL".
func (mf *mountFile) addTables(v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return mf.errorf(v, "tables: want a list of {name: NAME, url: URL} or \"[NAME=]URL\"")
	}
	for _, item := range v.Content {
		src, err := mf.table(item)
		if err != nil {
			return err
		}
		mf.tables = append(mf.tables, src)
	}
	return nil
}

// table parses one item of tables.
func (mf *mountFile) table(item *yaml.Node) (mount.Source, error) {
	if item.Kind == yaml.ScalarNode {
		if item.Value == "" {
			return mount.Source{}, mf.errorf(item, "tables: empty entry")
		}
		return parseSource(item.Value), nil
	}
	if item.Kind != yaml.MappingNode {
		return mount.Source{}, mf.errorf(item, "tables: want {name: NAME, url: URL} or \"[NAME=]URL\"")
	}
	var src mount.Source
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return src, mf.errorf(v, "tables: %s: want a single value", k.Value)
		}
		switch k.Value {
		case "name":
			src.Name = v.Value
		case "url":
			src.URL = v.Value
		default:
			return src, mf.errorf(k, "tables: unknown field %q (want name, url)", k.Value)
		}
	}
	if src.URL == "" {
		return src, mf.errorf(item, "tables: entry without url")
	}
	return src, nil
}

// flagNames lists the flags a config file may set.
func flagNames(flags *flag.FlagSet) string {
	var names []string
	flags.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// applySettings sets each setting whose flag was not given on the command
// line (set): command-line flags override the file. An invalid value is
// an error naming where it came from.
func applySettings(flags *flag.FlagSet, settings []setting, set map[string]bool) error {
	for _, s := range settings {
		if set[s.name] {
			continue
		}
		if err := flags.Set(s.name, s.value); err != nil {
			return fmt.Errorf("%w: %s: %s: value %q: %v", errConfig, s.where, s.name, s.value, err)
		}
	}
	return nil
}

// setFlags returns the names of the flags given on the command line.
func setFlags(flags *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// mergeArgs returns the sources and mountpoint of a mount: positional
// arguments SOURCE... MOUNTPOINT replace the file's tables and mountpoint;
// a single positional argument replaces only the mountpoint.
func mergeArgs(mf *mountFile, pos []string) (sources []mount.Source, mountpoint string, err error) {
	if mf != nil {
		sources, mountpoint = mf.tables, mf.mountpoint
	}
	switch {
	case len(pos) == 1:
		mountpoint = pos[0]
	case len(pos) >= 2:
		sources = nil
		for _, arg := range pos[:len(pos)-1] {
			sources = append(sources, parseSource(arg))
		}
		mountpoint = pos[len(pos)-1]
	}
	if mountpoint == "" || len(sources) == 0 {
		return nil, "", errUsage
	}
	return sources, mountpoint, nil
}

// checkedString is a string flag whose value is checked when set, so
// that a bad value in a config file is reported with its line.
type checkedString struct {
	p     *string
	check func(string) error
}

func (c checkedString) String() string {
	if c.p == nil {
		return ""
	}
	return *c.p
}

func (c checkedString) Set(s string) error {
	if err := c.check(s); err != nil {
		return err
	}
	*c.p = s
	return nil
}
