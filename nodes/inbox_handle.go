package nodes

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// inboxHandle is one open of a staged file: a descriptor of the staging
// file, whether the open may write, and the process that opened it
// (whose close decides the outcome; see InboxFile).
type inboxHandle struct {
	f          *os.File
	write      bool
	appendMode bool // O_APPEND: writes go to the end, whatever offset the kernel sends
	pid        uint32
	closed     bool // guarded by InboxFile.mu: the opener closed its last descriptor (see InboxFile.Flush)
}

func (h *inboxHandle) read(dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *inboxHandle) writeAt(data []byte, off int64) (int, error) {
	var n int
	var err error
	if h.appendMode {
		n, err = h.f.Write(data)
	} else {
		n, err = h.f.WriteAt(data, off)
	}
	return n, err
}

// callerPid is the thread id of the process making the FUSE request, 0
// when unknown.
func callerPid(ctx context.Context) uint32 {
	if c, ok := ctx.(*fuse.Context); ok {
		return c.Pid
	}
	return 0
}

// sameProcess reports whether two thread ids belong to one process (FUSE
// reports the calling thread, and a Go program closes a file from another
// thread than it opened it on). Unknown ids count as another process,
// as mountpoint-s3 does: the last Release then decides.
func sameProcess(a, b uint32) bool {
	if a == b {
		return true
	}
	ta, tb := tgid(a), tgid(b)
	return ta != 0 && ta == tb
}

// tgid returns the process (thread group) id of thread id, 0 if unknown.
func tgid(tid uint32) uint32 {
	if tid == 0 {
		return 0
	}
	id := strconv.FormatUint(uint64(tid), 10)
	f, err := os.Open("/proc/" + id + "/task/" + id + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return 0
			}
			return uint32(n)
		}
	}
	return 0
}

// holdsDescriptor reports whether the process of thread tid has a file
// descriptor open on the mount's inode ino (a dup of one being closed:
// close(2) takes the descriptor out of the table before the FLUSH
// request, so the one closing is not seen). It reads
// /proc/<pid>/fdinfo, which names each descriptor's inode without
// touching the file (no request to this mount). Unknown answers are
// "no". go-fuse numbers these inodes from 2^63 up, so another file
// system's inode does not match; another deltafs mount's can (each
// numbers its inodes alike), so when the mount's mnt_id is known
// (mntID != 0) the descriptor must be on it too: else one process
// writing a file in each of two mounts would see its close() return
// before the commit.
func holdsDescriptor(tid uint32, mntID, ino uint64) bool {
	pid := tgid(tid)
	if pid == 0 {
		return false
	}
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/fdinfo/"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "\nino:\t" + strconv.FormatUint(ino, 10) + "\n"
	wantMnt := "\nmnt_id:\t" + strconv.FormatUint(mntID, 10) + "\n"
	for _, e := range ents {
		data, err := os.ReadFile(dir + e.Name())
		if err == nil && strings.Contains(string(data), want) && (mntID == 0 || strings.Contains(string(data), wantMnt)) {
			return true
		}
	}
	return false
}
