package nfsfront

// Observer: what the server tells metrics of its requests and connections.

import (
	"encoding/binary"
	"strconv"
	"time"
)

// Observer is told of every request the server answers and of its
// connections, for metrics. Implementations must be fast and safe for
// concurrent use.
type Observer interface {
	// Request is one call answered after d: proc names the procedure
	// ("lookup", "read", "mount_mnt"), status its outcome ("ok", an
	// nfsstat3 name such as "NFS3ERR_NOENT", or an RPC-level failure:
	// "garbage_args", "system_err", "proc_unavail", "prog_unavail",
	// "prog_mismatch", "denied").
	Request(proc, status string, d time.Duration)
	// Connections is the number of open client connections, after each
	// change.
	Connections(n int)
}

var nfsProcNames = [...]string{"null", "getattr", "setattr", "lookup", "access", "readlink", "read",
	"write", "create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir",
	"readdirplus", "fsstat", "fsinfo", "pathconf", "commit"}

var mountProcNames = [...]string{"mount_null", "mount_mnt", "mount_dump", "mount_umnt", "mount_umntall", "mount_export"}

// procName names a call's procedure for an Observer.
func procName(cl call) string {
	switch {
	case cl.prog == nfsProgram && int(cl.proc) < len(nfsProcNames):
		return nfsProcNames[cl.proc]
	case cl.prog == mountProgram && int(cl.proc) < len(mountProcNames):
		return mountProcNames[cl.proc]
	}
	return "unknown"
}

var nfsStatNames = map[uint32]string{
	nfs3OK: "ok", nfs3Perm: "NFS3ERR_PERM", nfs3NoEnt: "NFS3ERR_NOENT", nfs3IO: "NFS3ERR_IO",
	nfs3Acces: "NFS3ERR_ACCES", nfs3Exist: "NFS3ERR_EXIST", nfs3XDev: "NFS3ERR_XDEV",
	nfs3NotDir: "NFS3ERR_NOTDIR", nfs3IsDir: "NFS3ERR_ISDIR", nfs3Inval: "NFS3ERR_INVAL",
	nfs3FBig: "NFS3ERR_FBIG", nfs3NoSpc: "NFS3ERR_NOSPC", nfs3ROFS: "NFS3ERR_ROFS",
	nfs3NameTooLong: "NFS3ERR_NAMETOOLONG", nfs3NotEmpty: "NFS3ERR_NOTEMPTY", nfs3Stale: "NFS3ERR_STALE",
	nfs3BadHandle: "NFS3ERR_BADHANDLE", nfs3BadCookie: "NFS3ERR_BAD_COOKIE", nfs3NotSupp: "NFS3ERR_NOTSUPP",
	nfs3TooSmall: "NFS3ERR_TOOSMALL", nfs3ServerFault: "NFS3ERR_SERVERFAULT", nfs3BadType: "NFS3ERR_BADTYPE",
	nfs3Jukebox: "NFS3ERR_JUKEBOX",
}

var acceptStatNames = map[uint32]string{
	progUnavail: "prog_unavail", progMismatch: "prog_mismatch", procUnavail: "proc_unavail",
	garbageArgs: "garbage_args", systemErr: "system_err",
}

// replyStatus reads the outcome of the call cl from its reply: the
// RPC's accept status, then the procedure's own status where its result
// starts with one (every NFSv3 procedure but NULL, MOUNT's MNT).
func replyStatus(cl call, reply []byte) string {
	word := func(i int) (uint32, bool) {
		off := 4 + 4*i // after the record mark
		if len(reply) < off+4 {
			return 0, false
		}
		return binary.BigEndian.Uint32(reply[off:]), true
	}
	if st, _ := word(2); st != msgAccepted {
		return "denied"
	}
	if st, _ := word(5); st != acceptSuccess {
		if name, ok := acceptStatNames[st]; ok {
			return name
		}
		return "accept_" + strconv.Itoa(int(st))
	}
	hasStatus := cl.prog == nfsProgram && cl.proc != procNull || cl.prog == mountProgram && cl.proc == mountMnt
	st, ok := word(6)
	if !hasStatus || !ok || st == 0 {
		return "ok"
	}
	if cl.prog == mountProgram {
		return "MNT3ERR_" + strconv.Itoa(int(st))
	}
	if name, ok := nfsStatNames[st]; ok {
		return name
	}
	return "NFS3ERR_" + strconv.Itoa(int(st))
}
