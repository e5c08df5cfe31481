package nfsfront

import "testing"

// A reply's outcome, as the Observer is told it.
func TestReplyStatus(t *testing.T) {
	nfs := func(proc uint32) call { return call{prog: nfsProgram, vers: 3, proc: proc} }
	mnt := call{prog: mountProgram, vers: 3, proc: mountMnt}
	mntErr := replyHeader(1, acceptSuccess)
	mntErr.uint32(mnt3NoEnt)
	c := &conn{}
	for _, tc := range []struct {
		cl    call
		reply *encoder
		want  string
	}{
		{nfs(procLookup), ok(1, nfs3OK), "ok"},
		{nfs(procLookup), ok(1, nfs3NoEnt), "NFS3ERR_NOENT"},
		{nfs(procReaddir), ok(1, nfs3BadCookie), "NFS3ERR_BAD_COOKIE"},
		{nfs(procNull), replyHeader(1, acceptSuccess), "ok"},
		{nfs(procRead), garbage(1), "garbage_args"},
		{nfs(99), replyHeader(1, procUnavail), "proc_unavail"},
		{mnt, mntErr, "MNT3ERR_2"},
		{call{prog: mountProgram, proc: mountExport}, replyHeader(1, acceptSuccess), "ok"},
		{nfs(procGetattr), c.denied(1), "denied"},
	} {
		if got := replyStatus(tc.cl, tc.reply.b); got != tc.want {
			t.Errorf("%s: %q, want %q", procName(tc.cl), got, tc.want)
		}
	}
	if got := procName(nfs(procReaddirplus)); got != "readdirplus" {
		t.Errorf("procName = %q", got)
	}
}
