package nodes

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// snapshotTree is the Hive layout of one snapshot: the live files placed
// under "col=value/" directories built from their partition values (the
// table's logical column names, in partition column order, escaped as
// Spark does), flat for unpartitioned tables. It is immutable once built,
// and lives as the snapshot's memo (delta.Snapshot.Memo): in the table's
// cache, charged to its byte budget, evicted and rebuilt with it.
//
// Names never collide: partition directories are named first; a file whose
// base name is already taken in its directory gets "~2", "~3", ... before
// its extension, in path order of the files, so the names are stable.
//
// Cost: one treeEntry (24 bytes) a file, the names sharing the adds' path
// strings where they need no suffix; a directory's entries are found by
// binary search, with no per-name map.
type snapshotTree struct {
	dirs  map[string]*treeDir // by directory path, "" = the snapshot root
	bytes int64               // estimated heap bytes
	// servedAs fingerprints what, beside a file's own add action, decides
	// the bytes it is served with: the schema, the partition columns and
	// the column mapping mode (see fileIno).
	servedAs string
}

// treeDir is one directory of a snapshotTree.
type treeDir struct {
	entries []treeEntry // sorted by name
	warmed  atomic.Bool // its files' sizes were hinted to Files.Warm
}

// treeEntry is a subdirectory (add == nil) or a live file.
type treeEntry struct {
	name string
	add  *delta.Add
}

// snapRef is what every node of one @vN keeps of it: the table and the
// version, never the snapshot itself, which the table's cache holds (and
// rebuilds, identical, after evicting it). It is shared by the version's
// directories and files.
type snapRef struct {
	env     *Env
	table   Table
	files   Files
	name    string      // the table's name in the mount
	version int64       // the snapshot's version
	mtime   time.Time   // the version's commit time, for its directories
	errs    *dataErrors // the table's record of files that failed to serve
	dir     *TableDir   // the table's directory: who may use the snapshot's entries
}

// snapshot returns the snapshot, from the table's cache or rebuilt.
func (r *snapRef) snapshot(ctx context.Context) (*delta.Snapshot, error) {
	return r.table.Snapshot(ctx, r.version)
}

// tree returns the snapshot's layout, building it on first use.
func (r *snapRef) tree(ctx context.Context) (*snapshotTree, error) {
	snap, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	v, err := snap.Memo(func() (any, int64, error) {
		t, err := buildTree(snap)
		if err != nil {
			return nil, 0, err
		}
		return t, t.bytes, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*snapshotTree), nil
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
	md := snap.Metadata()
	t := &snapshotTree{dirs: map[string]*treeDir{"": {}},
		servedAs: fmt.Sprintf("%s\x00%q\x00%s", md.SchemaString, md.PartitionColumns, snap.ColumnMapping())}
	cols := md.PartitionColumns
	fileDirs := make([]*treeDir, len(files))
	for i := range files {
		dir, d := "", t.dirs[""]
		for _, c := range cols {
			seg := delta.HivePathSegment(c, files[i].PartitionValues[c])
			child := path.Join(dir, seg)
			cd, ok := t.dirs[child]
			if !ok {
				cd = &treeDir{}
				t.dirs[child] = cd
				d.entries = append(d.entries, treeEntry{name: seg})
				t.bytes += 200 + int64(2*len(child))
			}
			dir, d = child, cd
		}
		fileDirs[i] = d
	}
	taken := map[*treeDir]map[string]bool{} // only while building: names used so far
	for i := range files {
		d := fileDirs[i]
		if taken[d] == nil {
			taken[d] = map[string]bool{}
			for _, e := range d.entries {
				taken[d][e.name] = true
			}
		}
		name := freeName(taken[d], path.Base(files[i].Key))
		taken[d][name] = true
		d.entries = append(d.entries, treeEntry{name: name, add: files[i].Add})
	}
	for _, d := range t.dirs {
		sort.Slice(d.entries, func(i, j int) bool { return d.entries[i].name < d.entries[j].name })
		t.bytes += 24*int64(cap(d.entries)) + 64
	}
	return t, nil
}

// freeName returns name, or name with "~N" before its extension when name
// is taken.
func freeName(taken map[string]bool, name string) string {
	if !taken[name] {
		return name
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for n := 2; ; n++ {
		cand := stem + "~" + strconv.Itoa(n) + ext
		if !taken[cand] {
			return cand
		}
	}
}

// lookup returns the entry called name in d.
func (d *treeDir) lookup(name string) (treeEntry, bool) {
	i := sort.Search(len(d.entries), func(i int) bool { return d.entries[i].name >= name })
	if i < len(d.entries) && d.entries[i].name == name {
		return d.entries[i], true
	}
	return treeEntry{}, false
}
