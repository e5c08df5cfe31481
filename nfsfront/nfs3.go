package nfsfront

// The NFSv3 procedures (RFC 1813): each decoded, answered through the tree,
// and encoded with its attributes.

import (
	"errors"
	"io"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// NFSv3 (RFC 1813): each procedure decodes its arguments, does what the
// FUSE requests of the tree do (fs.go, file.go, write.go), and encodes
// the result. Paths come from handles (handles.go); attributes from the
// tree, as the kernel would see them.

const (
	nfsProgram   = 100003
	mountProgram = 100005

	rtmax = 1 << 20 // largest READ and WRITE: the FUSE mount's request size
	wtmax = 1 << 20
)

// nfsstat3 values.
const (
	nfs3OK          = 0
	nfs3Perm        = 1
	nfs3NoEnt       = 2
	nfs3IO          = 5
	nfs3Acces       = 13
	nfs3Exist       = 17
	nfs3XDev        = 18
	nfs3NotDir      = 20
	nfs3IsDir       = 21
	nfs3Inval       = 22
	nfs3FBig        = 27
	nfs3NoSpc       = 28
	nfs3ROFS        = 30
	nfs3NameTooLong = 63
	nfs3NotEmpty    = 66
	nfs3Stale       = 70
	nfs3BadHandle   = 10001
	nfs3BadCookie   = 10003
	nfs3NotSupp     = 10004
	nfs3BadType     = 10007
	nfs3TooSmall    = 10005
	nfs3ServerFault = 10006
	nfs3Jukebox     = 10008
)

// The procedures.
const (
	procNull = iota
	procGetattr
	procSetattr
	procLookup
	procAccess
	procReadlink
	procRead
	procWrite
	procCreate
	procMkdir
	procSymlink
	procMknod
	procRemove
	procRmdir
	procRename
	procLink
	procReaddir
	procReaddirplus
	procFsstat
	procFsinfo
	procPathconf
	procCommit
)

// statusOf maps an error of the tree to an nfsstat3.
func statusOf(err error) uint32 {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		if errors.Is(err, os.ErrNotExist) {
			return nfs3NoEnt
		}
		return nfs3IO
	}
	switch errno {
	case syscall.ENOENT:
		return nfs3NoEnt
	case syscall.EPERM:
		return nfs3Perm
	case syscall.EACCES:
		return nfs3Acces
	case syscall.EEXIST:
		return nfs3Exist
	case syscall.EXDEV:
		return nfs3XDev
	case syscall.ENOTDIR:
		return nfs3NotDir
	case syscall.EISDIR:
		return nfs3IsDir
	case syscall.EINVAL:
		return nfs3Inval
	case syscall.EFBIG:
		return nfs3FBig
	case syscall.ENOSPC:
		return nfs3NoSpc
	case syscall.EROFS:
		return nfs3ROFS
	case syscall.ENAMETOOLONG:
		return nfs3NameTooLong
	case syscall.ENOTEMPTY:
		return nfs3NotEmpty
	case syscall.ESTALE:
		return nfs3Stale
	case syscall.ENOSYS, syscall.EOPNOTSUPP:
		return nfs3NotSupp
	case syscall.EAGAIN:
		return nfs3Jukebox
	}
	return nfs3IO
}

// nfs3 answers an NFSv3 call.
func (s *Server) nfs3(c call) *encoder {
	a := &c.args
	switch c.proc {
	case procNull:
		return replyHeader(c.xid, acceptSuccess)
	case procGetattr:
		return s.getattr(c.xid, a)
	case procSetattr:
		return s.setattr(c.xid, a)
	case procLookup:
		return s.lookup(c.xid, a)
	case procAccess:
		return s.access(c.xid, a)
	case procReadlink:
		return s.readlink(c.xid, a)
	case procRead:
		return s.read(c.xid, a)
	case procWrite:
		return s.write(c.xid, a)
	case procCreate:
		return s.create(c.xid, a)
	case procMkdir:
		return s.mkdir(c.xid, a)
	case procSymlink:
		return s.symlink(c.xid, a)
	case procMknod:
		return s.mknod(c.xid, a)
	case procRemove, procRmdir:
		return s.remove(c.xid, a)
	case procRename:
		return s.rename(c.xid, a)
	case procLink:
		return s.link(c.xid, a)
	case procReaddir:
		return s.readdir(c.xid, a, false)
	case procReaddirplus:
		return s.readdir(c.xid, a, true)
	case procFsstat:
		return s.fsstat(c.xid, a)
	case procFsinfo:
		return s.fsinfo(c.xid, a)
	case procPathconf:
		return s.pathconf(c.xid, a)
	case procCommit:
		return s.commit(c.xid, a)
	}
	return replyHeader(c.xid, procUnavail)
}

// ok starts a successful reply with status st.
func ok(xid uint32, st uint32) *encoder {
	e := replyHeader(xid, acceptSuccess)
	e.uint32(st)
	return e
}

func garbage(xid uint32) *encoder { return replyHeader(xid, garbageArgs) }

// fh decodes a file handle and returns its path; st is not nfs3OK for a
// handle this server never gave.
func (s *Server) fh(a *decoder) (p string, st uint32) {
	b := a.opaque(64)
	if a.err != nil {
		return "", nfs3BadHandle
	}
	if len(b) != handleSize {
		return "", nfs3BadHandle
	}
	key := [handleSize]byte(b)
	if key == handleOf("") {
		return "", nfs3OK
	}
	p, known := s.handles.get(key)
	if !known {
		return "", nfs3Stale
	}
	return p, nfs3OK
}

// handleFor returns (and remembers) the handle of p.
func (s *Server) handleFor(p string) []byte {
	key := handleOf(p)
	s.handles.add(key, p)
	return key[:]
}

// attr returns the attributes of p as the tree gives them (not
// following a symbolic link).
func (s *Server) attr(p string) (fuse.Attr, error) {
	fi, err := s.fs.Lstat(p)
	if err != nil {
		return fuse.Attr{}, err
	}
	return fi.(*fileInfo).attr, nil
}

// fattr3 encodes attributes.
func fattr3(e *encoder, a fuse.Attr) {
	typ := uint32(1)
	switch a.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		typ = 2
	case syscall.S_IFBLK:
		typ = 3
	case syscall.S_IFCHR:
		typ = 4
	case syscall.S_IFLNK:
		typ = 5
	case syscall.S_IFSOCK:
		typ = 6
	case syscall.S_IFIFO:
		typ = 7
	}
	e.uint32(typ)
	e.uint32(a.Mode & 0o7777)
	e.uint32(max(a.Nlink, 1))
	e.uint32(a.Uid)
	e.uint32(a.Gid)
	e.uint64(a.Size)
	e.uint64(a.Blocks * 512)
	e.uint32(0) // rdev
	e.uint32(0)
	e.uint64(1) // fsid: one file system
	e.uint64(a.Ino)
	for _, t := range [][2]uint32{{uint32(a.Atime), a.Atimensec}, {uint32(a.Mtime), a.Mtimensec}, {uint32(a.Ctime), a.Ctimensec}} {
		e.uint32(t[0])
		e.uint32(t[1])
	}
}

// postOp encodes post_op_attr of p (absent when p cannot be stat'ed).
func (s *Server) postOp(e *encoder, p string) {
	a, err := s.attr(p)
	if err != nil {
		e.bool(false)
		return
	}
	e.bool(true)
	fattr3(e, a)
}

// writable is st, or NFS3ERR_ROFS when the server takes no change.
func (s *Server) writable(st uint32) uint32 {
	if st == nfs3OK && s.fs.writes == nil {
		return nfs3ROFS
	}
	return st
}

// noAttr is a reply of status st whose post_op_attr is absent (a
// failure before the object could be stat'ed).
func noAttr(xid, st uint32) *encoder {
	e := ok(xid, st)
	e.bool(false)
	return e
}

// wccStatus answers a change with its status and the wcc_data of p.
func (s *Server) wccStatus(xid, st uint32, p string) *encoder {
	e := ok(xid, st)
	s.wcc(e, p)
	return e
}

// wcc encodes wcc_data with no pre-operation attributes.
func (s *Server) wcc(e *encoder, p string) {
	e.bool(false)
	s.postOp(e, p)
}

func (s *Server) getattr(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	if a.err != nil {
		return garbage(xid)
	}
	if st != nfs3OK {
		return ok(xid, st)
	}
	attr, err := s.attr(p)
	if err != nil {
		return ok(xid, statusOf(err))
	}
	e := ok(xid, nfs3OK)
	fattr3(e, attr)
	return e
}

// dirop decodes diropargs3: the directory's path and a name in it.
func (s *Server) dirop(a *decoder) (dir, name string, st uint32) {
	dir, st = s.fh(a)
	name = a.string(maxName)
	if st == nfs3OK && (name == "" || containsSlash(name)) {
		st = nfs3Inval
	}
	if st == nfs3OK && (name == "." || name == "..") {
		st = nfs3Exist // not a name a change may take; LOOKUP resolves them itself
	}
	return dir, name, st
}

// maxName is the longest name taken (NAME_MAX).
const maxName = 255

// maxPath is the longest symbolic link target taken (PATH_MAX).
const maxPath = 4096

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == 0 {
			return true
		}
	}
	return false
}

func (s *Server) lookup(xid uint32, a *decoder) *encoder {
	dir, name, st := s.dirop(a)
	if a.err != nil {
		return garbage(xid)
	}
	if st == nfs3Exist { // "." or ".."
		st = nfs3OK
	}
	if st != nfs3OK {
		return noAttr(xid, st)
	}
	p := clean(path.Join(dir, name))
	attr, err := s.attr(p)
	if err != nil {
		e := ok(xid, statusOf(err))
		s.postOp(e, dir)
		return e
	}
	e := ok(xid, nfs3OK)
	e.opaque(s.handleFor(p))
	e.bool(true)
	fattr3(e, attr)
	s.postOp(e, dir)
	return e
}

// The ACCESS bits.
const (
	accessRead    = 0x01
	accessLookup  = 0x02
	accessModify  = 0x04
	accessExtend  = 0x08
	accessDelete  = 0x10
	accessExecute = 0x20
)

func (s *Server) access(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	want := a.uint32()
	if a.err != nil {
		return garbage(xid)
	}
	if st != nfs3OK {
		return noAttr(xid, st)
	}
	attr, err := s.attr(p)
	if err != nil {
		return noAttr(xid, statusOf(err))
	}
	// The tree's modes say what it allows (the kernel checks them on a
	// FUSE mount: default_permissions); the owner's bits are the ones
	// that count, the mount serving one user.
	mode := attr.Mode
	got := uint32(0)
	if mode&0o400 != 0 {
		got |= accessRead
	}
	if mode&0o200 != 0 && s.fs.writes != nil {
		got |= accessModify | accessExtend | accessDelete
	}
	if mode&0o100 != 0 {
		got |= accessLookup | accessExecute
	}
	e := ok(xid, nfs3OK)
	e.bool(true)
	fattr3(e, attr)
	e.uint32(want & got)
	return e
}

func (s *Server) readlink(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	if a.err != nil {
		return garbage(xid)
	}
	if st != nfs3OK {
		return noAttr(xid, st)
	}
	target, err := s.fs.Readlink(p)
	if err != nil {
		e := ok(xid, statusOf(err))
		s.postOp(e, p)
		return e
	}
	e := ok(xid, nfs3OK)
	s.postOp(e, p)
	e.string(target)
	return e
}

func (s *Server) read(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	off := a.uint64()
	count := min(a.uint32(), rtmax)
	if a.err != nil {
		return garbage(xid)
	}
	if st == nfs3OK && off > 1<<62 {
		st = nfs3Inval
	}
	if st != nfs3OK {
		return noAttr(xid, st)
	}
	attr, err := s.attr(p)
	if err == nil && attr.Mode&syscall.S_IFMT != syscall.S_IFREG {
		err = syscall.EISDIR
		if attr.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			err = syscall.EINVAL
		}
	}
	var of *openFile
	if err == nil {
		of, err = s.fs.opens.get(p)
	}
	if err != nil {
		e := ok(xid, statusOf(err))
		s.postOp(e, p)
		return e
	}
	defer s.fs.opens.put(of)
	e := &encoder{b: getBuf(int(count) + 256)}
	e.b = append(e.b, 0, 0, 0, 0) // the record mark
	e.uint32(xid)
	e.uint32(rpcReply)
	e.uint32(msgAccepted)
	e.uint32(authNone)
	e.uint32(0)
	e.uint32(acceptSuccess)
	e.uint32(nfs3OK)
	e.bool(true)
	fattr3(e, attr)
	at := len(e.b)
	e.b = e.b[:at+12+int(count)]
	n, err := of.readAt(e.b[at+12:], int64(off))
	if err != nil && !errors.Is(err, io.EOF) {
		putBuf(e.b)
		e := ok(xid, statusOf(err))
		s.postOp(e, p)
		return e
	}
	eof := errors.Is(err, io.EOF) || off+uint64(n) >= attr.Size
	e.b = e.b[:at]
	e.uint32(uint32(n))
	e.bool(eof)
	e.uint32(uint32(n))
	e.b = e.b[:len(e.b)+n]
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
	e.pooled = true
	return e
}

// stable_how values.
const (
	unstable = 0
	fileSync = 2
)

func (s *Server) write(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	off := a.uint64()
	a.uint32() // count: the data's own length is the one that counts
	how := a.uint32()
	data := a.opaque(wtmax)
	if a.err != nil {
		return garbage(xid)
	}
	st = s.writable(st)
	if st != nfs3OK {
		return s.wccStatus(xid, st, "")
	}
	wf, err := s.fs.writes.get(p)
	var n int
	if err == nil {
		n, err = wf.writeAt(data, int64(off))
	}
	if how != unstable {
		// Not flushed: an inbox commits a file on fsync, and this WRITE
		// is not the file's last. The staged bytes are not kept across a
		// restart of the server anyway (nor of a FUSE mount); the write
		// verifier changes then, and the only acknowledgement of an append
		// is its commit: the RENAME's answer, or inbox/_status.jsonl.
		how = fileSync
	}
	if err != nil {
		return s.wccStatus(xid, statusOf(err), p)
	}
	e := ok(xid, nfs3OK)
	s.wcc(e, p)
	e.uint32(uint32(n))
	e.uint32(how)
	e.fixed(s.verf[:])
	return e
}

func (s *Server) commit(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	a.uint64()
	a.uint32()
	if a.err != nil {
		return garbage(xid)
	}
	st = s.writable(st)
	if st != nfs3OK {
		return s.wccStatus(xid, st, "")
	}
	if err := s.fs.writes.commit(p); err != nil {
		return s.wccStatus(xid, statusOf(err), p)
	}
	e := ok(xid, nfs3OK)
	s.wcc(e, p)
	e.fixed(s.verf[:])
	return e
}

// sattr3 is a decoded set of attributes to change.
type sattr3 struct {
	mode, uid, gid *uint32
	size           *uint64
	atime, mtime   *time.Time
}

func decodeSattr(a *decoder) sattr3 {
	var s sattr3
	u32 := func() *uint32 {
		if a.bool() {
			v := a.uint32()
			return &v
		}
		return nil
	}
	s.mode, s.uid, s.gid = u32(), u32(), u32()
	if a.bool() {
		v := a.uint64()
		s.size = &v
	}
	for _, t := range []**time.Time{&s.atime, &s.mtime} {
		switch a.uint32() {
		case 1: // SET_TO_SERVER_TIME
			now := time.Now()
			*t = &now
		case 2: // SET_TO_CLIENT_TIME
			v := time.Unix(int64(a.uint32()), int64(a.uint32()))
			*t = &v
		}
	}
	return s
}

// apply changes the attributes of p through the tree.
func (s *Server) apply(p string, sa sattr3) error {
	ch := changer{s.fs}
	if sa.size != nil {
		wf, err := s.fs.writes.get(p)
		if err != nil {
			return err
		}
		if err := wf.truncate(int64(*sa.size)); err != nil {
			return err
		}
	}
	if sa.mode != nil {
		if err := ch.Chmod(p, os.FileMode(*sa.mode&0o7777)); err != nil {
			return err
		}
	}
	if sa.uid != nil || sa.gid != nil {
		attr, err := s.attr(p)
		if err != nil {
			return err
		}
		uid, gid := attr.Uid, attr.Gid
		if sa.uid != nil {
			uid = *sa.uid
		}
		if sa.gid != nil {
			gid = *sa.gid
		}
		if uid != attr.Uid || gid != attr.Gid {
			if err := ch.Lchown(p, int(uid), int(gid)); err != nil {
				return err
			}
		}
	}
	if sa.atime != nil || sa.mtime != nil {
		at, mt := time.Now(), time.Now()
		if sa.atime != nil {
			at = *sa.atime
		}
		if sa.mtime != nil {
			mt = *sa.mtime
		}
		return ch.Chtimes(p, at, mt)
	}
	return nil
}

func (s *Server) setattr(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	sa := decodeSattr(a)
	if a.bool() { // guard: ctime
		a.uint32()
		a.uint32()
	}
	if a.err != nil {
		return garbage(xid)
	}
	st = s.writable(st)
	if st == nfs3OK {
		if err := s.apply(p, sa); err != nil {
			st = statusOf(err)
		}
	}
	e := ok(xid, st)
	s.wcc(e, p)
	return e
}

// created encodes the result of CREATE, MKDIR: the new object's handle
// and attributes, and the directory's.
func (s *Server) created(xid uint32, dir, p string, err error) *encoder {
	if err != nil {
		return s.wccStatus(xid, statusOf(err), dir)
	}
	e := ok(xid, nfs3OK)
	e.bool(true)
	e.opaque(s.handleFor(p))
	s.postOp(e, p)
	s.wcc(e, dir)
	return e
}

// symlink makes a symbolic link through the tree (which refuses: a
// snapshot with EROFS, the inbox, which takes Parquet files and
// directories only, with what it answers a FUSE symlink(2)).
func (s *Server) symlink(xid uint32, a *decoder) *encoder {
	dir, name, st := s.dirop(a)
	decodeSattr(a)
	target := a.string(maxPath)
	if a.err != nil {
		return garbage(xid)
	}
	if st = s.writable(st); st != nfs3OK {
		return s.wccStatus(xid, st, dir)
	}
	p := path.Join(dir, name)
	return s.created(xid, dir, p, s.fs.Symlink(target, p))
}

// Types of MKNOD (ftype3).
const (
	nfs3Chr  = 4
	nfs3Blk  = 3
	nfs3Sock = 6
	nfs3Fifo = 7
)

// mknod makes a special file through the tree (which refuses it).
func (s *Server) mknod(xid uint32, a *decoder) *encoder {
	dir, name, st := s.dirop(a)
	mode, rdev := uint32(0), uint32(0)
	switch t := a.uint32(); t {
	case nfs3Chr, nfs3Blk:
		kind := uint32(syscall.S_IFCHR)
		if t == nfs3Blk {
			kind = syscall.S_IFBLK
		}
		sa := decodeSattr(a)
		major, minor := a.uint32(), a.uint32()
		mode, rdev = kind|perm(sa), uint32(unix.Mkdev(major, minor))
	case nfs3Sock:
		mode = syscall.S_IFSOCK | perm(decodeSattr(a))
	case nfs3Fifo:
		mode = syscall.S_IFIFO | perm(decodeSattr(a))
	default:
		if st == nfs3OK {
			st = nfs3BadType
		}
	}
	if a.err != nil {
		return garbage(xid)
	}
	if st = s.writable(st); st != nfs3OK {
		return s.wccStatus(xid, st, dir)
	}
	p := path.Join(dir, name)
	return s.created(xid, dir, p, s.fs.Mknod(p, mode, rdev))
}

// perm is the mode a sattr3 sets, 0644 by default.
func perm(sa sattr3) uint32 {
	if sa.mode != nil {
		return *sa.mode & 0o7777
	}
	return 0o644
}

// exclusives remembers the verifiers of the latest exclusive creates, so
// that one sent again gets the same answer.
type exclusives struct {
	mu sync.Mutex
	m  map[string]uint64 // guarded by mu
}

// maxExclusives bounds the verifiers kept.
const maxExclusives = 4096

func (x *exclusives) add(p string, verf uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil || len(x.m) >= maxExclusives {
		x.m = map[string]uint64{}
	}
	x.m[p] = verf
}

func (x *exclusives) made(p string, verf uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	v, ok := x.m[p]
	return ok && v == verf
}

// The createhow3 modes.
const (
	createUnchecked = 0
	createGuarded   = 1
	createExclusive = 2
)

func (s *Server) create(xid uint32, a *decoder) *encoder {
	dir, name, st := s.dirop(a)
	how := a.uint32()
	var sa sattr3
	var verf uint64
	switch how {
	case createUnchecked, createGuarded:
		sa = decodeSattr(a)
	case createExclusive:
		verf = a.uint64()
	}
	if a.err != nil {
		return garbage(xid)
	}
	st = s.writable(st)
	if st != nfs3OK {
		return s.wccStatus(xid, st, dir)
	}
	p := path.Join(dir, name)
	if _, err := s.fs.Lstat(p); err == nil && how != createUnchecked {
		// An exclusive create sent again (its reply lost) finds the file
		// it made: the same verifier answers as the first time.
		if how == createExclusive && s.exclusive.made(p, verf) {
			return s.created(xid, dir, p, nil)
		}
		return s.wccStatus(xid, nfs3Exist, dir)
	}
	if how == createExclusive {
		// O_EXCL (mkstemp: rsync's temporary files). The verifier is kept
		// in memory, not in the file's times as RFC 1813 suggests: the
		// tree's files keep the times it gives them. The client sets the
		// attributes it wants with SETATTR next.
		_, err := s.fs.writes.create(p, 0o600)
		if err == nil {
			s.exclusive.add(p, verf)
		}
		return s.created(xid, dir, p, err)
	}
	mode := os.FileMode(0o644)
	if sa.mode != nil {
		mode = os.FileMode(*sa.mode & 0o777)
	}
	_, err := s.fs.writes.create(p, mode)
	if err == nil && sa.size != nil && *sa.size != 0 {
		err = s.apply(p, sattr3{size: sa.size})
	}
	return s.created(xid, dir, p, err)
}

func (s *Server) mkdir(xid uint32, a *decoder) *encoder {
	dir, name, st := s.dirop(a)
	sa := decodeSattr(a)
	if a.err != nil {
		return garbage(xid)
	}
	st = s.writable(st)
	if st != nfs3OK {
		return s.wccStatus(xid, st, dir)
	}
	mode := os.FileMode(0o755)
	if sa.mode != nil {
		mode = os.FileMode(*sa.mode & 0o777)
	}
	p := path.Join(dir, name)
	return s.created(xid, dir, p, s.fs.Mkdir(p, mode))
}

func (s *Server) remove(xid uint32, a *decoder) *encoder {
	dir, name, st := s.dirop(a)
	if a.err != nil {
		return garbage(xid)
	}
	st = s.writable(st)
	if st == nfs3OK {
		if err := s.fs.Remove(path.Join(dir, name)); err != nil {
			st = statusOf(err)
		}
	}
	e := ok(xid, st)
	s.wcc(e, dir)
	return e
}

func (s *Server) rename(xid uint32, a *decoder) *encoder {
	fromDir, fromName, st := s.dirop(a)
	toDir, toName, st2 := s.dirop(a)
	if a.err != nil {
		return garbage(xid)
	}
	if st == nfs3OK {
		st = st2
	}
	st = s.writable(st)
	if st == nfs3OK {
		if err := s.fs.Rename(path.Join(fromDir, fromName), path.Join(toDir, toName)); err != nil {
			st = statusOf(err)
		}
	}
	e := ok(xid, st)
	s.wcc(e, fromDir)
	s.wcc(e, toDir)
	return e
}

// link makes a hard link through the tree (which refuses it).
func (s *Server) link(xid uint32, a *decoder) *encoder {
	p, st := s.fh(a)
	dir, name, st2 := s.dirop(a)
	if a.err != nil {
		return garbage(xid)
	}
	if st == nfs3OK {
		st = st2
	}
	if st = s.writable(st); st == nfs3OK {
		if err := s.fs.Link(p, path.Join(dir, name)); err != nil {
			st = statusOf(err)
		}
	}
	e := ok(xid, st)
	s.postOp(e, p)
	s.wcc(e, dir)
	return e
}

// attrProc answers a procedure on one handle whose result is the
// object's attributes followed by fields (FSSTAT, FSINFO, PATHCONF).
func (s *Server) attrProc(xid uint32, a *decoder, fields func(e *encoder)) *encoder {
	p, st := s.fh(a)
	if a.err != nil {
		return garbage(xid)
	}
	if st != nfs3OK {
		return noAttr(xid, st)
	}
	e := ok(xid, nfs3OK)
	s.postOp(e, p)
	fields(e)
	return e
}

func (s *Server) fsstat(xid uint32, a *decoder) *encoder {
	return s.attrProc(xid, a, func(e *encoder) {
		for range 6 { // bytes and files: total, free, available; none known
			e.uint64(0)
		}
		e.uint32(0) // invarsec
	})
}

func (s *Server) fsinfo(xid uint32, a *decoder) *encoder {
	return s.attrProc(xid, a, func(e *encoder) {
		for _, v := range []uint32{rtmax, rtmax, 4096, wtmax, wtmax, 4096, readDirBuf} { // rt max, pref, mult; wt; dtpref
			e.uint32(v)
		}
		e.uint64(1 << 62) // maxfilesize
		e.uint32(0)       // time_delta: 1 ns
		e.uint32(1)
		e.uint32(0x0002 | 0x0008 | 0x0010) // FSF_SYMLINK, FSF_HOMOGENEOUS, FSF_CANSETTIME
	})
}

func (s *Server) pathconf(xid uint32, a *decoder) *encoder {
	return s.attrProc(xid, a, func(e *encoder) {
		e.uint32(1)       // linkmax
		e.uint32(maxName) // name_max
		e.bool(true)      // no_trunc
		e.bool(true)      // chown_restricted
		e.bool(false)     // case_insensitive
		e.bool(true)      // case_preserving
	})
}
