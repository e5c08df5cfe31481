package nodes

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
)

// ChangesName is the directory of a table's change data feed, resolved
// when named (not listed in the table directory, like @<time>).
const ChangesName = "@changes"

// changesReadme is the one file of @changes: how to name a range.
const changesReadme = `This directory gives a table's change data feed as Parquet files: what a
range of versions inserted, deleted and updated, with the table's columns
and _change_type (insert, delete, update_preimage, update_postimage),
_commit_version and _commit_timestamp, as Spark's table_changes gives them.

Name a range to see its files (ranges are not listed):
  ls @changes/v10..v20/              versions 10 to 20, both included
  ls @changes/v10../                 version 10 to the latest
  ls @changes/2026-05-01..2026-05-02/  by time: from the first version committed
                                     at or after the first, to the last at or
                                     before the second (any form @<time> takes)
  duckdb -c "select * from '@changes/v10..v20/*.parquet'"

A range the feed cannot give (the feed off at some version, the schema
changed, its commits no longer in the log) holds only _deltafs_error.txt
saying why.
`

// ChangesDir is TABLE/@changes.
type ChangesDir struct {
	fs.Inode
	readOnlyDir

	dir *TableDir
}

var (
	_ = (fs.NodeGetattrer)((*ChangesDir)(nil))
	_ = (fs.NodeLookuper)((*ChangesDir)(nil))
	_ = (fs.NodeReaddirer)((*ChangesDir)(nil))
)

const (
	kindChanges = "changes"
	readmeName  = "README.txt"
)

func (c *ChangesDir) ino() uint64 { return StableIno(kindChanges, c.dir.name, -1, "") }

// Getattr reports a read-only directory.
func (c *ChangesDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	acc := c.dir.access()
	FillAttr(&out.Attr, c.ino(), acc.Dir(), acc.Owner, 0, time.Time{})
	out.SetTimeout(c.dir.env.Opts.LongTimeout)
	return 0
}

// Readdir lists the README only: ranges are resolved when named.
func (c *ChangesDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewListDirStream([]fuse.DirEntry{{Name: readmeName, Mode: syscall.S_IFREG, Ino: StableIno(kindChanges, c.dir.name, -1, readmeName)}}), 0
}

// Lookup returns the README or the directory of a range FROM..TO.
func (c *ChangesDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if name == readmeName {
		ino := StableIno(kindChanges, c.dir.name, -1, readmeName)
		f := &textFile{text: []byte(changesReadme), ino: ino, acc: c.dir.access()}
		f.ro = roNode{c.dir.env, &f.Inode}
		f.fill(&out.Attr)
		out.SetEntryTimeout(c.dir.env.Opts.LongTimeout)
		out.SetAttrTimeout(c.dir.env.Opts.LongTimeout)
		return c.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
	}
	from, to, moving, err := c.resolve(ctx, name)
	if err != nil {
		return nil, c.dir.env.metaErrno("resolve a range of changes", err, "table", c.dir.name, "range", name)
	}
	ino := StableIno(kindChanges, c.dir.name, from, fmt.Sprintf("%d..%d", from, to))
	r := &ChangeRangeDir{dir: c.dir, from: from, to: to, ino: ino}
	r.ro = roNode{c.dir.env, &r.Inode}
	r.fill(&out.Attr)
	timeout := c.dir.env.Opts.LongTimeout
	if moving { // open-ended or named by time: may mean other versions later
		timeout = c.dir.env.Opts.ShortTimeout
	}
	out.SetEntryTimeout(timeout)
	out.SetAttrTimeout(timeout)
	return c.NewInode(ctx, r, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino}), 0
}

// resolve turns FROM..TO into versions; moving says whether the name may
// resolve to other versions later (an open end, a time).
func (c *ChangesDir) resolve(ctx context.Context, name string) (from, to int64, moving bool, err error) {
	a, b, ok := strings.Cut(name, "..")
	if !ok || a == "" {
		return 0, 0, false, fmt.Errorf("%w: %q is not FROM..TO", delta.ErrInvalidSpec, name)
	}
	var m1, m2 bool
	if from, m1, err = c.bound(ctx, a, true); err != nil {
		return 0, 0, false, err
	}
	if b == "" {
		latest, err := c.dir.table.Latest(ctx)
		if err != nil {
			return 0, 0, false, err
		}
		return from, latest.Version(), true, nil
	}
	if to, m2, err = c.bound(ctx, b, false); err != nil {
		return 0, 0, false, err
	}
	if to < from {
		return 0, 0, false, fmt.Errorf("%w: %q ends before it starts", delta.ErrInvalidSpec, name)
	}
	return from, to, m1 || m2, nil
}

// bound resolves one bound: vN, or a time: the first version at or after
// it for a start, the version as of it for an end (Spark's table_changes).
func (c *ChangesDir) bound(ctx context.Context, s string, start bool) (v int64, moving bool, err error) {
	spec, err := delta.ParseSpec(s)
	if err != nil {
		return 0, false, err
	}
	switch {
	case spec.Latest:
		return 0, false, fmt.Errorf("%w: a range is bounded by versions or times, not %q", delta.ErrInvalidSpec, s)
	case spec.IsTime && start:
		v, err := c.dir.table.VersionAtOrAfter(ctx, spec.Time)
		return v, true, err
	case spec.IsTime:
		v, err := c.dir.table.VersionAt(ctx, spec.Time)
		return v, true, err
	}
	return spec.Version, false, nil
}
