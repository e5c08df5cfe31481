package nfsfront

import (
	"cmp"
	"os"
	"path"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is the tree as the go-billy file system go-nfs serves. A read-only
// one lacks billy.WriteCapability, and go-nfs answers every change with
// NFS3ERR_ROFS.
type FS struct {
	t      *tree
	opens  *opens
	writes *writes // nil: read-only
	mask   uint32  // the umask READDIRPLUS attributes get (see Options.Umask)
}

var (
	_ billy.Filesystem = (*FS)(nil)
	_ billy.Capable    = (*FS)(nil)
)

func newFS(raw fuse.RawFileSystem, opts Options) *FS {
	t := newTree(raw, fuse.Caller{Owner: fuse.Owner{Uid: opts.UID, Gid: opts.GID}})
	f := &FS{t: t, opens: newOpens(t), mask: opts.Umask & 0o777}
	if opts.Writable {
		f.writes = newWrites(t, cmp.Or(opts.Settle, DefaultSettle))
	}
	return f
}

// Capabilities says what the file system does: read and seek, and write
// unless it is read-only.
func (f *FS) Capabilities() billy.Capability {
	c := billy.ReadCapability | billy.SeekCapability
	if f.writes != nil {
		c |= billy.WriteCapability | billy.ReadAndWriteCapability
	}
	return c
}

// close releases every open file and every lookup held.
func (f *FS) close() {
	if f.writes != nil {
		f.writes.stopAll()
	}
	f.opens.closeAll()
	f.t.forgetAll()
}

func rofs(op, name string) error { return errno(op, clean(name), fuse.EROFS) }

// Open opens a file for reading.
func (f *FS) Open(name string) (billy.File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile opens a file for reading, or for writing (go-nfs opens with
// O_RDWR for each WRITE, and O_WRONLY|O_EXCL to truncate); writing to a
// read-only file system is refused (EROFS).
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	p := clean(name)
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		if f.writes == nil {
			return nil, rofs("open", name)
		}
		if flag&os.O_CREATE != 0 {
			if _, err := f.Lstat(p); err != nil {
				wf, err := f.writes.create(p, perm)
				if err != nil {
					return nil, err
				}
				return &writeHandle{f: wf, name: name}, nil
			}
		}
		wf, err := f.writes.get(p)
		if err != nil {
			return nil, err
		}
		return &writeHandle{f: wf, name: name}, nil
	}
	of, err := f.opens.get(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, err
		}
		// go-nfs answers a failed open with NFS3ERR_ACCES; the tree's
		// reason (EIO: a file that cannot be served) is a READ's error,
		// which it answers with NFS3ERR_IO.
		return &failed{name: name, err: err}, nil
	}
	return &handle{o: f.opens, f: of, name: name}, nil
}

// Lstat returns the attributes of name, not following a symbolic link.
func (f *FS) Lstat(name string) (os.FileInfo, error) {
	p := clean(name)
	attr, err := f.t.attr(p)
	if err != nil {
		return nil, err
	}
	return &fileInfo{name: path.Base("/" + p), attr: f.masked(attr)}, nil
}

// Stat returns the attributes of name, following symbolic links (at
// most maxLinks of them).
func (f *FS) Stat(name string) (os.FileInfo, error) {
	p := clean(name)
	for range maxLinks {
		fi, err := f.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return fi, err
		}
		target, err := f.t.readlink(p)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(target, "/") { // outside the tree: not ours to follow
			return nil, errno("stat", p, fuse.ENOENT)
		}
		p = clean(path.Join(path.Dir("/"+p), target))
	}
	return nil, errno("stat", p, fuse.Status(40)) // ELOOP
}

// maxLinks bounds the symbolic links Stat follows, as the kernel's 40.
const maxLinks = 40

// masked applies the mount's umask to attributes READDIRPLUS gave, as
// the mount's umask wrapper does to LOOKUP and GETATTR.
func (f *FS) masked(a fuse.Attr) fuse.Attr {
	a.Mode &^= f.mask
	return a
}

// ReadDir lists a directory with its entries' attributes.
func (f *FS) ReadDir(name string) ([]os.FileInfo, error) {
	infos, err := f.t.readDir(clean(name))
	if err != nil {
		return nil, err
	}
	for _, fi := range infos {
		fi := fi.(*fileInfo)
		fi.attr = f.masked(fi.attr)
	}
	return infos, nil
}

// Readlink returns a symbolic link's target.
func (f *FS) Readlink(name string) (string, error) { return f.t.readlink(clean(name)) }

// Join joins path elements.
func (f *FS) Join(elem ...string) string { return path.Join(elem...) }

// Root is the tree's root.
func (f *FS) Root() string { return "/" }

// Chroot is not supported: the export is the whole tree.
func (f *FS) Chroot(p string) (billy.Filesystem, error) {
	return nil, errno("chroot", clean(p), fuse.ENOSYS)
}
