package mount

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/nodes"
)

// mountedTable is one table of the mount with its storage.
type mountedTable struct {
	name  string
	store *blobstore.Store
	table *delta.Table
	owner *blobstore.Store // closed with the mount; nil when another table owns the bucket
}

// resolveSources opens every source: a source whose root holds
// _delta_log/ is one table, any other a warehouse whose children holding
// _delta_log/ are tables. A source that cannot be opened, or holds no
// table, or two tables with one name, is an error; a table that cannot be
// read is not (its directory will say why).
func resolveSources(ctx context.Context, sources []Source) ([]*mountedTable, error) {
	var out []*mountedTable
	seen := map[string]string{}
	for _, src := range sources {
		tables, err := resolveSource(ctx, src)
		if err != nil {
			closeTables(out)
			return nil, err
		}
		for _, t := range tables {
			if prev, dup := seen[t.name]; dup {
				closeTables(append(out, tables...))
				return nil, fmt.Errorf("two tables named %q (%s and %s): name them with NAME=URL", t.name, prev, t.store)
			}
			seen[t.name] = t.store.String()
		}
		out = append(out, tables...)
	}
	return out, nil
}

func resolveSource(ctx context.Context, src Source) ([]*mountedTable, error) {
	store, err := blobstore.Open(ctx, src.URL)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", blobstore.Redact(src.URL), err)
	}
	isTable, err := holdsLog(ctx, store)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("source %s: %w", store, err)
	}
	if isTable {
		name := src.Name
		if name == "" {
			name = defaultName(src.URL)
		}
		if err := checkName(name); err != nil {
			store.Close()
			return nil, fmt.Errorf("source %s: %w", store, err)
		}
		return []*mountedTable{newMountedTable(name, store)}, nil
	}
	return resolveWarehouse(ctx, store)
}

// resolveWarehouse returns the children of store that hold _delta_log/.
// They share store's bucket, closed with the first of them.
func resolveWarehouse(ctx context.Context, store *blobstore.Store) ([]*mountedTable, error) {
	dirs, err := store.ListDirs(ctx, "")
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("source %s: %w", store, err)
	}
	var out []*mountedTable
	for _, d := range dirs {
		sub := store.Sub(d)
		if err := sub.CheckRoot(); err != nil && sub.LocalDir() == "" {
			// The store would read every key of this child under another
			// name: shown, refused with the reason, rather than skipped.
			if checkName(d) == nil {
				out = append(out, &mountedTable{name: d, store: sub, table: delta.Open(unreadable{sub, err}, delta.Options{})})
			}
			continue
		}
		ok, err := holdsLog(ctx, sub)
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("source %s: %w", sub, err)
		}
		if ok && checkName(d) == nil {
			out = append(out, newMountedTable(d, sub))
		}
	}
	if len(out) == 0 {
		store.Close()
		return nil, fmt.Errorf("source %s: %w, and no child directory holds one", store, delta.ErrNotATable)
	}
	for _, t := range out {
		t.owner = nil // they share the warehouse's bucket
	}
	out[0].owner = store
	return out, nil
}

func newMountedTable(name string, store *blobstore.Store) *mountedTable {
	return &mountedTable{name: name, store: store, owner: store, table: delta.Open(store, delta.Options{})}
}

// holdsLog reports whether the root of store has a _delta_log/ directory.
func holdsLog(ctx context.Context, store *blobstore.Store) (bool, error) {
	dirs, err := store.ListDirs(ctx, "")
	if err != nil {
		return false, err
	}
	return slices.Contains(dirs, strings.TrimSuffix(delta.LogDir, "/")), nil
}

// defaultName is the last path element of a location, query excluded.
func defaultName(location string) string {
	if !strings.Contains(location, "://") {
		abs, err := filepath.Abs(location)
		if err != nil {
			return filepath.Base(location)
		}
		return filepath.Base(abs)
	}
	u, err := url.Parse(location)
	if err != nil {
		return ""
	}
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return u.Host
	}
	return path.Base(p)
}

// checkName rejects names that cannot be a directory entry.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("bad table name %q", name)
	}
	if name == nodes.StatusName {
		return fmt.Errorf("table name %q is reserved for the mount's status file", name)
	}
	return nil
}

func closeTables(ts []*mountedTable) {
	for _, t := range ts {
		if t.owner != nil {
			t.owner.Close()
		}
	}
}

// unreadable is the storage of a warehouse child that cannot be read as
// named: every request fails with why.
type unreadable struct {
	*blobstore.Store
	err error
}

func (u unreadable) List(context.Context, string, string) ([]delta.ObjectInfo, error) {
	return nil, u.err
}
func (u unreadable) ListDirs(context.Context, string) ([]string, error) { return nil, u.err }
func (u unreadable) Stat(context.Context, string) (delta.ObjectInfo, error) {
	return delta.ObjectInfo{}, u.err
}
func (u unreadable) ReadRange(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return nil, u.err
}
