package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// readOnlyDir answers every mutation of a directory with EROFS. Directory
// node types embed it after fs.Inode.
type readOnlyDir struct{}

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

func (readOnlyDir) Mkdir(context.Context, string, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, errReadOnly
}

func (readOnlyDir) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, errReadOnly
}

func (readOnlyDir) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, errReadOnly
}

func (readOnlyDir) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, errReadOnly
}

func (readOnlyDir) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, errReadOnly
}

func (readOnlyDir) Unlink(context.Context, string) syscall.Errno { return errReadOnly }

func (readOnlyDir) Rmdir(context.Context, string) syscall.Errno { return errReadOnly }

func (readOnlyDir) Rename(context.Context, string, fs.InodeEmbedder, string, uint32) syscall.Errno {
	return errReadOnly
}

func (readOnlyDir) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return errReadOnly
}

// readOnlyFile answers every mutation of a file (or symlink) with EROFS.
type readOnlyFile struct{}

var (
	_ = (fs.NodeSetattrer)((*readOnlyFile)(nil))
	_ = (fs.NodeSetxattrer)((*readOnlyFile)(nil))
	_ = (fs.NodeRemovexattrer)((*readOnlyFile)(nil))
)

func (readOnlyFile) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return errReadOnly
}

func (readOnlyFile) Setxattr(context.Context, string, []byte, uint32) syscall.Errno {
	return errReadOnly
}

func (readOnlyFile) Removexattr(context.Context, string) syscall.Errno { return errReadOnly }

// writeFlags are the open flags that would modify a file.
const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND

// isWriteOpen reports whether open flags ask for writing.
func isWriteOpen(flags uint32) bool { return flags&writeFlags != 0 }
