package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/serve"
)

// ChangeRangeDir is TABLE/@changes/FROM..TO: the change files of versions
// from..to, flat (their partition values are columns in each file), named
// vVERSION-N-NAME.parquet in the order the feed gives them. A range the
// feed cannot give holds only _deltafs_error.txt saying why. The plan (the
// files, from the log alone) is made when the directory is first listed
// or looked into and kept in the mount's plan cache (range_plans.go),
// under its budget: the node holds only the range's bounds.
type ChangeRangeDir struct {
	fs.Inode
	readOnlyDir

	dir      *TableDir
	from, to int64
	ino      uint64
}

// maxRangeFiles bounds the change files one range directory lists (its
// plan holds each: ~400 bytes, ~850 with partition values (planCost), so
// 50-110 MiB at most): a longer range is refused, saying so; deltafs
// changes streams any length.
var maxRangeFiles = 1 << 17 // a variable for tests

// errRangeTooLarge marks a range with more than maxRangeFiles files.
var errRangeTooLarge = errors.New("range too large")

var (
	_ = (fs.NodeGetattrer)((*ChangeRangeDir)(nil))
	_ = (fs.NodeLookuper)((*ChangeRangeDir)(nil))
	_ = (fs.NodeReaddirer)((*ChangeRangeDir)(nil))
)

func (r *ChangeRangeDir) fill(a *fuse.Attr) {
	acc := r.dir.access()
	FillAttr(a, r.ino, acc.Dir(), acc.Owner, 0, time.Time{})
}

// Getattr reports a read-only directory.
func (r *ChangeRangeDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.fill(&out.Attr)
	out.SetTimeout(r.dir.env.Opts.LongTimeout)
	return 0
}

// plan returns the range's plan, from the mount's plan cache or made now.
// A refusal is a plan; another failure (storage) is returned, and tried
// again at the next request.
func (r *ChangeRangeDir) plan(ctx context.Context) (*rangePlan, syscall.Errno) {
	p, err := r.dir.env.plans.get(ctx, planKey{r.dir, r.from, r.to}, r.build)
	if err != nil {
		return nil, r.dir.env.metaErrno("plan changes", err, "table", r.dir.name, "from", r.from, "to", r.to)
	}
	return p, 0
}

// build lists the range's change files from the log. Its end snapshot is
// asked for first, so that a version that cannot be read refuses the
// range; it stays in (and is charged to) the snapshot cache.
func (r *ChangeRangeDir) build(ctx context.Context) (*rangePlan, error) {
	_, err := r.dir.table.Snapshot(ctx, r.to)
	var files []delta.ChangeFile
	if err == nil {
		err = r.dir.table.Changes(ctx, r.from, r.to, func(f delta.ChangeFile) error {
			if len(files) == maxRangeFiles {
				return fmt.Errorf("%w: the range has more than %d change files: name a shorter one", errRangeTooLarge, maxRangeFiles)
			}
			files = append(files, f)
			return nil
		})
	}
	switch {
	case err == nil:
	case errors.Is(err, delta.ErrChangesUnavailable), errors.Is(err, delta.ErrUnsupportedFeature),
		errors.Is(err, delta.ErrVersionNotFound), errors.Is(err, errRangeTooLarge):
		return &rangePlan{refused: err, cost: planOverhead + int64(len(err.Error()))}, nil
	default:
		return nil, err
	}
	p := &rangePlan{files: slices.Clip(files), names: make(map[string]int, len(files))}
	for i, f := range files {
		p.names[serve.ChangeFileName(i, f)] = i
	}
	p.cost = planCost(p.files, p.names)
	return p, nil
}

// Readdir lists the change files, or the reason file of a refused range.
func (r *ChangeRangeDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	p, errno := r.plan(ctx)
	if errno != 0 {
		return nil, errno
	}
	if p.refused != nil {
		return fs.NewListDirStream([]fuse.DirEntry{{Name: ReasonName, Mode: syscall.S_IFREG}}), 0
	}
	entries := make([]fuse.DirEntry, len(p.files))
	for i, f := range p.files {
		name := serve.ChangeFileName(i, f)
		entries[i] = fuse.DirEntry{Name: name, Mode: syscall.S_IFREG, Ino: StableIno(kindChanges, r.dir.name, r.from, fmt.Sprintf("%d..%d/%s", r.from, r.to, name))}
	}
	return fs.NewListDirStream(entries), 0
}

// Lookup returns a change file, or the reason file of a refused range.
func (r *ChangeRangeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p, errno := r.plan(ctx)
	if errno != 0 {
		return nil, errno
	}
	refused := p.refused
	i, ok := p.names[name]
	var cf delta.ChangeFile
	if ok {
		cf = p.files[i]
	}
	acc := r.dir.access()
	if refused != nil {
		if name != ReasonName {
			return nil, syscall.ENOENT
		}
		text := fmt.Sprintf("deltafs cannot give the changes of table %s, versions %d to %d: %v\n", r.dir.name, r.from, r.to, refused)
		ino := StableIno(kindReason, r.dir.name, r.from, fmt.Sprintf("changes %d..%d", r.from, r.to))
		f := &textFile{text: []byte(text), ino: ino, acc: acc}
		f.ro = roNode{r.dir.env, &f.Inode}
		f.fill(&out.Attr)
		return r.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
	}
	if !ok {
		return nil, syscall.ENOENT
	}
	ino := StableIno(kindChanges, r.dir.name, r.from, fmt.Sprintf("%d..%d/%s", r.from, r.to, name))
	c := &ChangeFileNode{dir: r.dir, to: r.to, cf: cf, name: name, ino: ino}
	c.ro = roNode{r.dir.env, &c.Inode}
	timeout, errno := c.fill(ctx, &out.Attr)
	if errno != 0 {
		return nil, errno
	}
	out.SetEntryTimeout(timeout)
	out.SetAttrTimeout(timeout)
	return r.NewInode(ctx, c, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
}
