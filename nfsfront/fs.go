package nfsfront

// FS, the tree by path as the NFS procedures see it: attributes, listings,
// links and the changes, each sent as FUSE requests.

import (
	"cmp"
	"os"
	"path"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is the tree by path, as the NFS procedures use it: attributes,
// listings, links, and (unless read-only) the changes, each sent as the
// FUSE requests the kernel would send.
type FS struct {
	t      *tree
	opens  *opens
	dirs   *dirStreams
	writes *writes // nil: read-only
	mask   uint32  // the umask READDIRPLUS attributes get (see Options.Umask)
}

func newFS(raw fuse.RawFileSystem, opts Options) *FS {
	t := newTree(raw, fuse.Caller{Owner: fuse.Owner{Uid: opts.UID, Gid: opts.GID}})
	f := &FS{t: t, opens: newOpens(t), dirs: newDirStreams(t), mask: opts.Umask & 0o777}
	if opts.Writable {
		f.writes = newWrites(t, cmp.Or(opts.Settle, DefaultSettle))
	}
	return f
}

// close releases every open file and directory and every lookup held.
func (f *FS) close() {
	if f.writes != nil {
		f.writes.stopAll()
	}
	f.opens.closeAll()
	f.dirs.closeAll()
	f.t.forgetAll()
}

func rofs(op, name string) error { return errno(op, clean(name), fuse.EROFS) }

// Lstat returns the attributes of name, not following a symbolic link.
func (f *FS) Lstat(name string) (os.FileInfo, error) {
	p := clean(name)
	attr, err := f.t.attr(p)
	if err != nil {
		return nil, err
	}
	return &fileInfo{name: path.Base("/" + p), attr: f.masked(attr)}, nil
}

// masked applies the mount's umask to attributes READDIRPLUS gave, as
// the mount's umask wrapper does to LOOKUP and GETATTR.
func (f *FS) masked(a fuse.Attr) fuse.Attr {
	a.Mode &^= f.mask
	return a
}

// Readlink returns a symbolic link's target.
func (f *FS) Readlink(name string) (string, error) { return f.t.readlink(clean(name)) }
