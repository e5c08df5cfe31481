package powerfs

import (
	"context"
	"maps"
	"slices"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The FUSE side: a view per node (dirView, fileView), made afresh by
// every Mount so that a mount after PowerLoss starts with no kernel state.
// Handles are nil: the views serve reads and writes themselves, and the
// kernel's page cache is write-through (go-fuse does not ask for the
// writeback cache), so every write(2) reaches the FS before it returns.

type dirView struct {
	gofs.Inode
	f *FS
	n *node
}

type fileView struct {
	gofs.Inode
	f *FS
	n *node
}

var (
	_ = (gofs.NodeLookuper)((*dirView)(nil))
	_ = (gofs.NodeReaddirer)((*dirView)(nil))
	_ = (gofs.NodeGetattrer)((*dirView)(nil))
	_ = (gofs.NodeSetattrer)((*dirView)(nil))
	_ = (gofs.NodeMkdirer)((*dirView)(nil))
	_ = (gofs.NodeCreater)((*dirView)(nil))
	_ = (gofs.NodeLinker)((*dirView)(nil))
	_ = (gofs.NodeUnlinker)((*dirView)(nil))
	_ = (gofs.NodeRmdirer)((*dirView)(nil))
	_ = (gofs.NodeRenamer)((*dirView)(nil))
	_ = (gofs.NodeFsyncer)((*dirView)(nil))
	_ = (gofs.NodeStatfser)((*dirView)(nil))

	_ = (gofs.NodeGetattrer)((*fileView)(nil))
	_ = (gofs.NodeSetattrer)((*fileView)(nil))
	_ = (gofs.NodeOpener)((*fileView)(nil))
	_ = (gofs.NodeReader)((*fileView)(nil))
	_ = (gofs.NodeWriter)((*fileView)(nil))
	_ = (gofs.NodeFsyncer)((*fileView)(nil))
	_ = (gofs.NodeFlusher)((*fileView)(nil))
)

// Mount serves the FS at dir (as root, without fusermount) until the
// returned server is unmounted.
func (f *FS) Mount(dir string) (*fuse.Server, error) {
	timeout := 10 * time.Second
	root := &dirView{f: f, n: f.root}
	return gofs.Mount(dir, root, &gofs.Options{
		MountOptions: fuse.MountOptions{
			FsName: "powerfs", Name: "powerfs", DirectMount: true, DisableXAttrs: true,
			MaxBackground: 8,
		},
		EntryTimeout: &timeout, AttrTimeout: &timeout,
		UID: uint32(syscall.Getuid()), GID: uint32(syscall.Getgid()),
	})
}

func (f *FS) view(n *node) gofs.InodeEmbedder {
	if n.dir {
		return &dirView{f: f, n: n}
	}
	return &fileView{f: f, n: n}
}

func stable(n *node) gofs.StableAttr {
	if n.dir {
		return gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: n.ino}
	}
	return gofs.StableAttr{Mode: syscall.S_IFREG, Ino: n.ino}
}

func fillAttr(n *node, a *fuse.Attr) {
	a.Ino = n.ino
	a.Nlink = max(n.nlink, 1)
	a.Mode = n.perm
	if n.dir {
		a.Mode |= syscall.S_IFDIR
		a.Size = 4096
	} else {
		a.Mode |= syscall.S_IFREG
		a.Size = uint64(len(n.data))
	}
	a.Blocks = (a.Size + 511) / 512
	a.Blksize = 4096
	a.SetTimes(nil, &n.mtime, &n.mtime)
	a.Uid, a.Gid = uint32(syscall.Getuid()), uint32(syscall.Getgid())
}

func (d *dirView) child(ctx context.Context, n *node, out *fuse.EntryOut) *gofs.Inode {
	fillAttr(n, &out.Attr)
	return d.NewInode(ctx, d.f.view(n), stable(n))
}

func (d *dirView) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(false); e != 0 {
		return nil, e
	}
	n := d.n.entries[name]
	if n == nil {
		return nil, syscall.ENOENT
	}
	return d.child(ctx, n, out), 0
}

func (d *dirView) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(false); e != 0 {
		return nil, e
	}
	var out []fuse.DirEntry
	for _, name := range sortedNames(d.n.entries) {
		n := d.n.entries[name]
		out = append(out, fuse.DirEntry{Name: name, Ino: n.ino, Mode: stable(n).Mode})
	}
	return gofs.NewListDirStream(out), 0
}

func (d *dirView) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(false); e != 0 {
		return e
	}
	fillAttr(d.n, &out.Attr)
	return 0
}

func (d *dirView) Setattr(ctx context.Context, _ gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return d.f.setattr(d.n, in, out)
}

func (f *FS) setattr(n *node, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.beginLocked(true); e != 0 {
		return e
	}
	if sz, ok := in.GetSize(); ok {
		if n.dir {
			return syscall.EISDIR
		}
		n.data = resize(n.data, int(sz))
	}
	if m, ok := in.GetMode(); ok {
		n.perm = m & 0o7777
	}
	if t, ok := in.GetMTime(); ok {
		n.mtime = t
	} else if _, ok := in.GetSize(); ok {
		n.mtime = time.Now()
	}
	fillAttr(n, &out.Attr)
	return 0
}

func resize(b []byte, n int) []byte {
	if n <= len(b) {
		return b[:n:n]
	}
	return append(b, make([]byte, n-len(b))...)
}

// add links n as name in d, under mu, after the checks.
func (d *dirView) addLocked(name string, n *node) syscall.Errno {
	if _, ok := d.n.entries[name]; ok {
		return syscall.EEXIST
	}
	d.n.entries[name] = n
	n.nlink++
	d.n.mtime = time.Now()
	return 0
}

func (d *dirView) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(true); e != 0 {
		return nil, e
	}
	n := d.f.newNodeLocked(true, mode)
	if e := d.addLocked(name, n); e != 0 {
		return nil, e
	}
	return d.child(ctx, n, out), 0
}

func (d *dirView) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(true); e != 0 {
		return nil, nil, 0, e
	}
	if old := d.n.entries[name]; old != nil {
		if flags&syscall.O_EXCL != 0 {
			return nil, nil, 0, syscall.EEXIST
		}
		if old.dir {
			return nil, nil, 0, syscall.EISDIR
		}
		if flags&syscall.O_TRUNC != 0 {
			old.data = old.data[:0:0]
		}
		return d.child(ctx, old, out), nil, 0, 0
	}
	n := d.f.newNodeLocked(false, mode)
	d.addLocked(name, n)
	return d.child(ctx, n, out), nil, 0, 0
}

func (d *dirView) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	fv, ok := target.(*fileView)
	if !ok {
		return nil, syscall.EPERM
	}
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(true); e != 0 {
		return nil, e
	}
	if e := d.addLocked(name, fv.n); e != 0 {
		return nil, e
	}
	return d.child(ctx, fv.n, out), 0
}

func (d *dirView) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.remove(name, false)
}

func (d *dirView) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.remove(name, true)
}

func (d *dirView) remove(name string, dir bool) syscall.Errno {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(true); e != 0 {
		return e
	}
	n := d.n.entries[name]
	switch {
	case n == nil:
		return syscall.ENOENT
	case dir && !n.dir:
		return syscall.ENOTDIR
	case !dir && n.dir:
		return syscall.EISDIR
	case dir && len(n.entries) > 0:
		return syscall.ENOTEMPTY
	}
	delete(d.n.entries, name)
	n.nlink--
	d.n.mtime = time.Now()
	return 0
}

// Rename flags of renameat2.
const (
	renameNoReplace = 1
	renameExchange  = 2
)

func (d *dirView) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to, ok := newParent.(*dirView)
	if !ok {
		return syscall.EXDEV
	}
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(true); e != 0 {
		return e
	}
	n := d.n.entries[name]
	if n == nil {
		return syscall.ENOENT
	}
	if flags&renameExchange != 0 {
		return syscall.EINVAL
	}
	if old := to.n.entries[newName]; old != nil {
		switch {
		case old == n:
			return 0
		case flags&renameNoReplace != 0:
			return syscall.EEXIST
		case old.dir && !n.dir:
			return syscall.EISDIR
		case !old.dir && n.dir:
			return syscall.ENOTDIR
		case old.dir && len(old.entries) > 0:
			return syscall.ENOTEMPTY
		}
		old.nlink--
	}
	delete(d.n.entries, name)
	to.n.entries[newName] = n
	d.n.mtime, to.n.mtime = time.Now(), time.Now()
	return 0
}

// Fsync of a directory makes its current names durable.
func (d *dirView) Fsync(ctx context.Context, _ gofs.FileHandle, flags uint32) syscall.Errno {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if e := d.f.beginLocked(true); e != 0 {
		return e
	}
	d.n.syncedEntries = maps.Clone(d.n.entries)
	d.f.stats.DirSyncs++
	return 0
}

func (d *dirView) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	out.Blocks, out.Bfree, out.Bavail = 1<<24, 1<<23, 1<<23
	out.Files, out.Ffree = 1<<20, 1<<19
	return 0
}

func (v *fileView) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	if e := v.f.beginLocked(false); e != 0 {
		return e
	}
	fillAttr(v.n, &out.Attr)
	return 0
}

func (v *fileView) Setattr(ctx context.Context, _ gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return v.f.setattr(v.n, in, out)
}

func (v *fileView) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	trunc := flags&syscall.O_TRUNC != 0
	if e := v.f.beginLocked(trunc); e != 0 {
		return nil, 0, e
	}
	if trunc {
		v.n.data = v.n.data[:0:0]
		v.n.mtime = time.Now()
	}
	return nil, 0, 0
}

func (v *fileView) Read(ctx context.Context, _ gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	if e := v.f.beginLocked(false); e != 0 {
		return nil, e
	}
	if off >= int64(len(v.n.data)) {
		return fuse.ReadResultData(nil), 0
	}
	n := copy(dest, v.n.data[off:])
	return fuse.ReadResultData(dest[:n]), 0
}

func (v *fileView) Write(ctx context.Context, _ gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	if e := v.f.beginLocked(true); e != 0 {
		return 0, e
	}
	if end := int(off) + len(data); end > len(v.n.data) {
		v.n.data = resize(v.n.data, end)
	}
	copy(v.n.data[off:], data)
	v.n.mtime = time.Now()
	return uint32(len(data)), 0
}

// Fsync of a file makes its current bytes durable (not its names).
func (v *fileView) Fsync(ctx context.Context, _ gofs.FileHandle, flags uint32) syscall.Errno {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	if e := v.f.beginLocked(true); e != 0 {
		return e
	}
	v.n.synced = slices.Clone(v.n.data)
	v.f.stats.FileSyncs++
	return 0
}

// Flush (close) makes nothing durable; it fails once the power is off.
func (v *fileView) Flush(ctx context.Context, _ gofs.FileHandle) syscall.Errno {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	return v.f.beginLocked(false)
}
