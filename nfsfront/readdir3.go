package nfsfront

import (
	"encoding/binary"
	"hash/fnv"
	"os"
	"path"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// READDIR and READDIRPLUS page a directory's listing by cookie: entry i
// of the listing has cookie i+3 ("." and ".." have 1 and 2), and the
// cookie verifier is a hash of the listing's names and inode numbers. A
// listing is kept for the pages that follow (listings.go); a later page
// whose verifier no longer matches the directory is NFS3ERR_BAD_COOKIE,
// and the client lists again.

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
		e := ok(xid, st)
		e.bool(false)
		return e
	}
	dirAttr, err := s.attr(p)
	if err != nil {
		e := ok(xid, statusOf(err))
		e.bool(false)
		return e
	}
	entries, v, err := s.listing(p, cookie, verf)
	if err != nil {
		e := ok(xid, statusOf(err))
		e.bool(true)
		fattr3(e, dirAttr)
		return e
	}
	if cookie != 0 && v != verf && verf != 0 {
		e := ok(xid, nfs3BadCookie)
		e.bool(true)
		fattr3(e, dirAttr)
		return e
	}
	e := ok(xid, nfs3OK)
	e.bool(true)
	fattr3(e, dirAttr)
	e.uint64(v)
	limit := len(e.b) + int(min(maxcount, 1<<20)) - 8 // the end: no more entries, eof
	dirBytes := 0
	n, eof := 0, true
	parent := path.Dir("/" + p)[1:]
	for i := int(cookie); i < len(entries)+2; i++ {
		var name, child string
		var fi *fileInfo
		switch i {
		case 0:
			name, child = ".", p
		case 1:
			name, child = "..", parent
		default:
			fi = entries[i-2].(*fileInfo)
			name, child = fi.name, path.Join(p, fi.name)
		}
		size := 8 + 4 + (len(name)+3)&^3 + 8
		rec := 4 + size
		if plus {
			rec += 4 + 84 + 4 + 4 + handleSize
		}
		if len(e.b)+rec > limit || (dircount > 0 && dirBytes+size > int(dircount)) {
			eof = false
			break
		}
		var attr fattr
		if fi != nil {
			attr.a, attr.ok = s.fs.masked(fi.attr), true
		} else if a, err := s.attr(child); err == nil {
			attr.a, attr.ok = a, true
		}
		e.bool(true)
		e.uint64(attr.a.Ino)
		e.string(name)
		e.uint64(uint64(i + 1))
		if plus {
			e.bool(attr.ok)
			if attr.ok {
				fattr3(e, attr.a)
			}
			e.bool(true)
			e.opaque(s.handleFor(child))
		}
		dirBytes += size
		n++
	}
	if n == 0 && !eof {
		e := ok(xid, nfs3TooSmall)
		e.bool(true)
		fattr3(e, dirAttr)
		return e
	}
	e.bool(false)
	e.bool(eof)
	return e
}

// fattr is attributes that may be missing.
type fattr struct {
	a  fuse.Attr
	ok bool
}

// listing returns the entries of directory p for a READDIR page at
// cookie: a fresh listing for the first page, else the one kept for the
// verifier (or a fresh one, whose verifier the caller compares).
func (s *Server) listing(p string, cookie, verf uint64) ([]os.FileInfo, uint64, error) {
	if cookie != 0 {
		if entries, ok := s.listings.get(p, verf); ok {
			return entries, verf, nil
		}
	}
	entries, err := s.fs.ReadDir(p)
	if err != nil {
		return nil, 0, err
	}
	v := verifierOf(entries)
	s.listings.add(p, v, entries)
	return entries, v, nil
}

// verifierOf hashes a listing's names and inode numbers (never 0).
func verifierOf(entries []os.FileInfo) uint64 {
	h := fnv.New64a()
	for _, fi := range entries {
		h.Write([]byte(fi.Name()))
		h.Write([]byte{0})
		if f, ok := fi.(*fileInfo); ok {
			h.Write(binary.LittleEndian.AppendUint64(nil, f.attr.Ino))
		}
	}
	return h.Sum64() | 1
}
