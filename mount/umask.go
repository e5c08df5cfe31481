package mount

import "github.com/hanwen/go-fuse/v2/fuse"

// umaskFS clears the umask's bits from the mode of every attribute the
// file system replies with. The mount disables READDIRPLUS when a umask
// is set, so that every mode reaches the kernel through these methods.
type umaskFS struct {
	fuse.RawFileSystem
	mask uint32
}

// withUmask returns raw with umask applied, or raw itself for a zero umask.
func withUmask(raw fuse.RawFileSystem, umask uint32) fuse.RawFileSystem {
	if umask&0o777 == 0 {
		return raw
	}
	return &umaskFS{RawFileSystem: raw, mask: umask & 0o777}
}

func (u *umaskFS) entry(st fuse.Status, out *fuse.EntryOut) fuse.Status {
	if st == fuse.OK {
		out.Mode &^= u.mask
	}
	return st
}

func (u *umaskFS) attr(st fuse.Status, out *fuse.AttrOut) fuse.Status {
	if st == fuse.OK {
		out.Mode &^= u.mask
	}
	return st
}

func (u *umaskFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	return u.entry(u.RawFileSystem.Lookup(cancel, h, name, out), out)
}

func (u *umaskFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	return u.attr(u.RawFileSystem.GetAttr(cancel, in, out), out)
}

func (u *umaskFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	return u.attr(u.RawFileSystem.SetAttr(cancel, in, out), out)
}

func (u *umaskFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return u.entry(u.RawFileSystem.Mkdir(cancel, in, name, out), out)
}

func (u *umaskFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return u.entry(u.RawFileSystem.Mknod(cancel, in, name, out), out)
}

func (u *umaskFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return u.entry(u.RawFileSystem.Link(cancel, in, name, out), out)
}

func (u *umaskFS) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return u.entry(u.RawFileSystem.Symlink(cancel, h, target, name, out), out)
}

func (u *umaskFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	return u.entry(u.RawFileSystem.Create(cancel, in, name, out), &out.EntryOut)
}
