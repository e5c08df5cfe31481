package nfsfront

// READDIR and READDIRPLUS replies: pages of entries that fit the client's
// count, with cookies and attributes.

import (
	"encoding/binary"
	"hash/fnv"
	"path"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// READDIR and READDIRPLUS page a directory by cookie: "." and ".." have
// 1 and 2, an entry its FUSE offset plus 2 (readdir.go streams the pages).
// The cookie verifier is a hash of the directory's inode number and
// times: a page whose verifier no longer matches (a table directory
// after a new version) is NFS3ERR_BAD_COOKIE, and the client lists again.

func (s *Server) readdir(xid uint32, a *decoder, plus bool) *encoder {
	p, st := s.fh(a)
	cookie := a.uint64()
	verf := a.uint64()
	dircount := a.uint32()
	maxcount := dircount
	if plus {
		maxcount = a.uint32()
	}
	if a.err != nil {
		return garbage(xid)
	}
	if st != nfs3OK {
		return noAttr(xid, st)
	}
	dirAttr, err := s.attr(p)
	if err != nil {
		return noAttr(xid, statusOf(err))
	}
	v := verifierOf(dirAttr)
	if cookie != 0 && verf != 0 && verf != v {
		return dirFailure(xid, nfs3BadCookie, dirAttr)
	}
	e := ok(xid, nfs3OK)
	e.bool(true)
	fattr3(e, dirAttr)
	e.uint64(v)
	pg := dirPage{s: s, e: e, plus: plus, dircount: int(dircount),
		limit: len(e.b) + int(min(maxcount, 1<<20)) - 8} // the end: no more entries, eof
	eof, st := pg.fill(p, cookie)
	switch {
	case st != nfs3OK:
		return dirFailure(xid, st, dirAttr)
	case pg.n == 0 && !eof:
		return dirFailure(xid, nfs3TooSmall, dirAttr)
	}
	e.bool(false) // no more entries
	e.bool(eof)
	return e
}

// dirFailure is a READDIR reply of status st with the directory's
// attributes.
func dirFailure(xid uint32, st uint32, dirAttr fuse.Attr) *encoder {
	e := ok(xid, st)
	e.bool(true)
	fattr3(e, dirAttr)
	return e
}

// dirPage is one READDIR reply being filled.
type dirPage struct {
	s        *Server
	e        *encoder
	plus     bool
	dircount int // the client's bound on names and cookies (0: none)
	limit    int // the reply's bound, in bytes of e
	dirBytes int
	n        int
}

// fill adds the entries of directory p after cookie while they fit and
// reports whether the listing ended.
func (pg *dirPage) fill(p string, cookie uint64) (eof bool, st uint32) {
	for ; cookie < 2; cookie++ {
		name, child := ".", p
		if cookie == 1 {
			name, child = "..", path.Dir("/" + p)[1:]
		}
		var attr fattr
		if a, err := pg.s.attr(child); err == nil {
			attr = fattr{a, true}
		}
		if !pg.add(name, child, attr, cookie+1) {
			return false, nfs3OK
		}
	}
	ds, err := pg.s.fs.dirs.take(p, cookie)
	if err != nil {
		return false, statusOf(err)
	}
	defer func() { pg.s.fs.dirs.put(ds, cookie) }()
	for {
		de, more, err := ds.peek()
		if err != nil {
			if pg.n > 0 {
				return false, nfs3OK // the client's next page says it
			}
			return false, statusOf(err)
		}
		if !more {
			return true, nfs3OK
		}
		attr := fattr{pg.s.fs.masked(de.attr), de.ok}
		if !pg.add(de.name, path.Join(p, de.name), attr, de.cookie) {
			return false, nfs3OK
		}
		ds.next()
		cookie = de.cookie
	}
}

// add encodes one entry if it fits.
func (pg *dirPage) add(name, child string, attr fattr, cookie uint64) bool {
	size := 8 + 4 + (len(name)+3)&^3 + 8
	rec := 4 + size
	if pg.plus {
		rec += 4 + 84 + 4 + 4 + handleSize
	}
	if len(pg.e.b)+rec > pg.limit || (pg.dircount > 0 && pg.dirBytes+size > pg.dircount) {
		return false
	}
	e := pg.e
	e.bool(true)
	e.uint64(attr.a.Ino)
	e.string(name)
	e.uint64(cookie)
	if pg.plus {
		e.bool(attr.ok)
		if attr.ok {
			fattr3(e, attr.a)
		}
		e.bool(true)
		e.opaque(pg.s.handleFor(child))
	}
	pg.dirBytes += size
	pg.n++
	return true
}

// fattr is attributes that may be missing.
type fattr struct {
	a  fuse.Attr
	ok bool
}

// verifierOf hashes a directory's inode number and times (never 0): they
// change when a table directory gains a version.
func verifierOf(a fuse.Attr) uint64 {
	h := fnv.New64a()
	var b []byte
	for _, x := range []uint64{a.Ino, a.Mtime, uint64(a.Mtimensec), a.Ctime, uint64(a.Ctimensec)} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	h.Write(b)
	return h.Sum64() | 1
}
