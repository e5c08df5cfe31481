package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// readOnlyDir answers every mutation of a directory with EROFS, logged
// (rate-limited, see refusals.go) when ro is set. Directory node types
// embed it after fs.Inode.
type readOnlyDir struct{ ro roNode }

var (
	_ = (fs.NodeMkdirer)((*readOnlyDir)(nil))
	_ = (fs.NodeMknoder)((*readOnlyDir)(nil))
	_ = (fs.NodeCreater)((*readOnlyDir)(nil))
	_ = (fs.NodeSymlinker)((*readOnlyDir)(nil))
	_ = (fs.NodeLinker)((*readOnlyDir)(nil))
	_ = (fs.NodeUnlinker)((*readOnlyDir)(nil))
	_ = (fs.NodeRmdirer)((*readOnlyDir)(nil))
	_ = (fs.NodeRenamer)((*readOnlyDir)(nil))
	_ = (fs.NodeSetattrer)((*readOnlyDir)(nil))
)

func (d readOnlyDir) Mkdir(_ context.Context, name string, _ uint32, _ *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, d.ro.refuse("mkdir", name)
}

func (d readOnlyDir) Mknod(_ context.Context, name string, _, _ uint32, _ *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, d.ro.refuse("mknod", name)
}

func (d readOnlyDir) Create(_ context.Context, name string, _, _ uint32, _ *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, d.ro.refuse("create", name)
}

func (d readOnlyDir) Symlink(_ context.Context, _, name string, _ *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, d.ro.refuse("symlink", name)
}

func (d readOnlyDir) Link(_ context.Context, _ fs.InodeEmbedder, name string, _ *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, d.ro.refuse("link", name)
}

func (d readOnlyDir) Unlink(_ context.Context, name string) syscall.Errno {
	return d.ro.refuse("unlink", name)
}

func (d readOnlyDir) Rmdir(_ context.Context, name string) syscall.Errno {
	return d.ro.refuse("rmdir", name)
}

func (d readOnlyDir) Rename(_ context.Context, name string, _ fs.InodeEmbedder, _ string, _ uint32) syscall.Errno {
	return d.ro.refuse("rename", name)
}

func (d readOnlyDir) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return d.ro.refuse("setattr", "")
}

// ReadOnlyFile answers every mutation of a file (or symlink) with EROFS,
// logged like readOnlyDir's.
type ReadOnlyFile struct{ ro roNode }

var (
	_ = (fs.NodeSetattrer)((*ReadOnlyFile)(nil))
	_ = (fs.NodeSetxattrer)((*ReadOnlyFile)(nil))
	_ = (fs.NodeRemovexattrer)((*ReadOnlyFile)(nil))
)

func (f ReadOnlyFile) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return f.ro.refuse("setattr", "")
}

func (f ReadOnlyFile) Setxattr(context.Context, string, []byte, uint32) syscall.Errno {
	return f.ro.refuse("setxattr", "")
}

func (f ReadOnlyFile) Removexattr(context.Context, string) syscall.Errno {
	return f.ro.refuse("removexattr", "")
}

// writeFlags are the open flags that would modify a file.
const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND

// IsWriteOpen reports whether open flags ask for writing.
func IsWriteOpen(flags uint32) bool { return flags&writeFlags != 0 }
