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
}

func (h *inboxHandle) read(dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *inboxHandle) writeAt(data []byte, off int64) (uint32, syscall.Errno) {
	var n int
	var err error
	if h.appendMode {
		n, err = h.f.Write(data)
	} else {
		n, err = h.f.WriteAt(data, off)
	}
	if err != nil {
		return uint32(n), fs.ToErrno(err)
	}
	return uint32(n), 0
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
