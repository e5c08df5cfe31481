package nodes

import (
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/deltafs/deltafs/delta"
)

// snapshotTree is the Hive layout of one snapshot: the live files placed
// under "col=value/" directories built from their partition values (the
// table's logical column names, in partition column order, escaped as
// Spark does), flat for unpartitioned tables. It is immutable once built.
//
// Names never collide: partition directories are named first; a file whose
// base name is already taken in its directory gets "~2", "~3", ... before
// its extension, in path order of the files, so the names are stable.
type snapshotTree struct {
	dirs map[string]*treeDir // by directory path, "" = the snapshot root
}

// treeDir is one directory of a snapshotTree.
type treeDir struct {
	entries []treeEntry    // sorted by name
	byName  map[string]int // index into entries
}

// treeEntry is a subdirectory (file == nil) or a live file.
type treeEntry struct {
	name string
	file *delta.LiveFile
}

// snapshotView is the lazily built tree of a snapshot, shared by the
// snapshot's directory nodes.
type snapshotView struct {
	snap *delta.Snapshot
	once sync.Once
	tree *snapshotTree
	err  error
}

// get builds the tree on first use.
func (v *snapshotView) get() (*snapshotTree, error) {
	v.once.Do(func() { v.tree, v.err = buildTree(v.snap) })
	return v.tree, v.err
}

// buildTree lays out the live files of snap.
func buildTree(snap *delta.Snapshot) (*snapshotTree, error) {
	files, err := snap.LiveFiles()
	if err != nil {
		return nil, err
	}
	// Snapshots list files in log order, which depends on checkpoints and
	// caches; sort so that colliding names get stable suffixes.
	sort.Slice(files, func(i, j int) bool {
		if files[i].Key != files[j].Key {
			return files[i].Key < files[j].Key
		}
		return files[i].Add.DeletionVector.UniqueID() < files[j].Add.DeletionVector.UniqueID()
	})
	cols := snap.Metadata().PartitionColumns
	t := &snapshotTree{dirs: map[string]*treeDir{"": newTreeDir()}}
	fileDirs := make([]string, len(files))
	for i := range files {
		dir := ""
		for _, c := range cols {
			seg := delta.HivePathSegment(c, files[i].PartitionValues[c])
			child := path.Join(dir, seg)
			if _, ok := t.dirs[child]; !ok {
				t.dirs[child] = newTreeDir()
				t.dirs[dir].add(seg, nil)
			}
			dir = child
		}
		fileDirs[i] = dir
	}
	for i := range files {
		d := t.dirs[fileDirs[i]]
		d.add(d.freeName(path.Base(files[i].Key)), &files[i])
	}
	for _, d := range t.dirs {
		d.sort()
	}
	return t, nil
}

func newTreeDir() *treeDir { return &treeDir{byName: map[string]int{}} }

func (d *treeDir) add(name string, f *delta.LiveFile) {
	d.byName[name] = len(d.entries)
	d.entries = append(d.entries, treeEntry{name: name, file: f})
}

// freeName returns name, or name with "~N" before its extension when name
// is taken.
func (d *treeDir) freeName(name string) string {
	if _, taken := d.byName[name]; !taken {
		return name
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for n := 2; ; n++ {
		cand := stem + "~" + strconv.Itoa(n) + ext
		if _, taken := d.byName[cand]; !taken {
			return cand
		}
	}
}

func (d *treeDir) sort() {
	sort.Slice(d.entries, func(i, j int) bool { return d.entries[i].name < d.entries[j].name })
	for i, e := range d.entries {
		d.byName[e.name] = i
	}
}

// lookup returns the entry called name in d.
func (d *treeDir) lookup(name string) (treeEntry, bool) {
	i, ok := d.byName[name]
	if !ok {
		return treeEntry{}, false
	}
	return d.entries[i], true
}
