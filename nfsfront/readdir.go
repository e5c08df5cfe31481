package nfsfront

import (
	"os"
	"path"
	"syscall"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// readDirBuf is the size of one READDIRPLUS reply asked of the file system.
const readDirBuf = 64 << 10

// Sizes of READDIRPLUS records: an EntryOut, then a dirent (ino, off,
// namelen, type), then the name padded to 8 bytes.
const (
	entryOutSize = int(unsafe.Sizeof(fuse.EntryOut{}))
	direntSize   = 24
)

// readDir lists directory p as the kernel does for ls -l: OPENDIR, then
// READDIRPLUS until it returns nothing, then RELEASEDIR. The nodes
// READDIRPLUS looks up are remembered as if looked up by name; an entry it
// did not look up is looked up by name.
func (t *tree) readDir(p string) ([]os.FileInfo, error) {
	e, err := t.lookup(p)
	if err != nil {
		return nil, err
	}
	defer t.release(e)
	h := t.header(e.id)
	var oo fuse.OpenOut
	if st := t.raw.OpenDir(t.cancel, &fuse.OpenIn{InHeader: h, Flags: uint32(os.O_RDONLY)}, &oo); st != fuse.OK {
		return nil, errno("opendir", p, st)
	}
	defer t.raw.ReleaseDir(&fuse.ReleaseIn{InHeader: h, Fh: oo.Fh})
	buf := make([]byte, readDirBuf)
	var out []os.FileInfo
	var off uint64
	for {
		list := fuse.NewDirEntryList(buf, off)
		in := fuse.ReadIn{InHeader: h, Fh: oo.Fh, Offset: off, Size: uint32(len(buf))}
		if st := t.raw.ReadDirPlus(t.cancel, &in, list); st != fuse.OK {
			return nil, errno("readdir", p, st)
		}
		data := list.Bytes()
		if len(data) == 0 {
			return out, nil
		}
		var err error
		if out, off, err = t.parseDirPlus(p, data, out); err != nil {
			return nil, err
		}
	}
}

// parseDirPlus appends the entries of one READDIRPLUS reply for directory
// p to out and returns the offset of the last.
func (t *tree) parseDirPlus(p string, data []byte, out []os.FileInfo) ([]os.FileInfo, uint64, error) {
	now := time.Now()
	var off uint64
	for i := 0; i+entryOutSize+direntSize <= len(data); {
		eo := *(*fuse.EntryOut)(unsafe.Pointer(&data[i]))
		d := data[i+entryOutSize:]
		off = *(*uint64)(unsafe.Pointer(&d[8]))
		n := int(*(*uint32)(unsafe.Pointer(&d[16])))
		if direntSize+n > len(d) {
			return nil, 0, errno("readdir", p, fuse.EIO)
		}
		name := string(d[direntSize : direntSize+n])
		i += entryOutSize + direntSize + (n+7)&^7
		if name == "." || name == ".." {
			if eo.NodeId != 0 {
				t.raw.Forget(eo.NodeId, 1)
			}
			continue
		}
		child := path.Join(p, name)
		if eo.NodeId == 0 {
			attr, err := t.attr(child)
			if err != nil {
				continue // gone since it was listed
			}
			out = append(out, &fileInfo{name: name, attr: attr})
			continue
		}
		ce := t.remember(child, &eo, now)
		t.release(ce)
		out = append(out, &fileInfo{name: name, attr: eo.Attr})
	}
	return out, off, nil
}

// fileInfo is a node's attributes as os.FileInfo (Sys gives them whole).
type fileInfo struct {
	name string
	attr fuse.Attr
}

func (fi *fileInfo) Name() string      { return fi.name }
func (fi *fileInfo) Size() int64       { return int64(fi.attr.Size) }
func (fi *fileInfo) Mode() os.FileMode { return fileMode(fi.attr.Mode) }
func (fi *fileInfo) ModTime() time.Time {
	return time.Unix(int64(fi.attr.Mtime), int64(fi.attr.Mtimensec))
}
func (fi *fileInfo) IsDir() bool { return fi.attr.Mode&syscall.S_IFMT == syscall.S_IFDIR }
func (fi *fileInfo) Sys() any    { return fi.attr }

// fileMode converts a POSIX mode to an os.FileMode.
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		mode |= os.ModeDir
	case syscall.S_IFLNK:
		mode |= os.ModeSymlink
	case syscall.S_IFIFO:
		mode |= os.ModeNamedPipe
	case syscall.S_IFSOCK:
		mode |= os.ModeSocket
	case syscall.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFBLK:
		mode |= os.ModeDevice
	}
	return mode
}
