package nfsfront

// The MOUNT protocol (RFC 1813, appendix I): the export's root handle.

// The MOUNT protocol, version 3 (RFC 1813, appendix I), on the NFS port:
// one export, "/".

const (
	mountNull = iota
	mountMnt
	mountDump
	mountUmnt
	mountUmntAll
	mountExport
)

const (
	mnt3OK    = 0
	mnt3NoEnt = 2
)

func (s *Server) mount3(c call) *encoder {
	a := &c.args
	switch c.proc {
	case mountNull, mountUmntAll:
		return replyHeader(c.xid, acceptSuccess)
	case mountMnt:
		dir := a.string(1024)
		if a.err != nil {
			return garbage(c.xid)
		}
		e := replyHeader(c.xid, acceptSuccess)
		if clean(dir) != "" {
			e.uint32(mnt3NoEnt)
			return e
		}
		e.uint32(mnt3OK)
		e.opaque(s.handleFor(""))
		e.uint32(2) // auth flavors
		e.uint32(authNone)
		e.uint32(authSys)
		return e
	case mountUmnt:
		a.string(1024)
		return replyHeader(c.xid, acceptSuccess)
	case mountDump:
		e := replyHeader(c.xid, acceptSuccess)
		e.bool(false) // no mount list kept
		return e
	case mountExport:
		e := replyHeader(c.xid, acceptSuccess)
		e.bool(true)
		e.string("/")
		e.bool(false) // no groups: every client the listener accepts
		e.bool(false)
		return e
	}
	return replyHeader(c.xid, procUnavail)
}
