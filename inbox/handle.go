package inbox

// inboxHandle: one open of a staged file, its reads and writes, and the
// process that opened it.

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
// (whose close decides the outcome; see File).
type inboxHandle struct {
	f          *os.File
	write      bool
	appendMode bool // O_APPEND: writes go to the end, whatever offset the kernel sends
	pid        uint32
	closed     bool // guarded by File.mu: the opener closed its last descriptor (see File.Flush)
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

// Descriptor checks: how a FLUSH learns whether it is the opener's
// last close (see File). close(2) takes the descriptor out of the
// table before the FLUSH request, so the one closing is never seen; any
// other descriptor of the process open FOR WRITING on the file is a dup
// of the write handle, because a second open for writing is EBUSY while
// it lives. Descriptors open for reading (the opener's own, or a sibling
// thread's fresh open) are not dups of the write handle and do not count:
// counting them made close() return 0 before the commit.

// fdinfoIno is the result of ProbeFdinfo.
type fdinfoIno int32

const (
	fdinfoUnknown fdinfoIno = iota
	fdinfoHasIno            // fdinfo names each descriptor's inode (Linux >= 5.14)
	fdinfoNoIno             // it does not: descriptors are matched by path
)

// probeFdinfo reports whether /proc/self/fdinfo/N has an "ino:" line
// (added in Linux 5.14). It opens a file of its own to look.
func probeFdinfo() fdinfoIno {
	f, err := os.Open("/proc/self/stat")
	if err != nil {
		return fdinfoNoIno
	}
	defer f.Close()
	data, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return fdinfoNoIno
	}
	if _, ok := fdinfoField(data, "ino"); ok {
		return fdinfoHasIno
	}
	return fdinfoNoIno
}

// fdinfoField returns the value of the line "name:\tvalue" of an fdinfo
// file.
func fdinfoField(data []byte, name string) (string, bool) {
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// descriptorCheck is what holdsWriteDescriptor matches a descriptor
// against: the mount (mntID, 0 when unknown), the file's inode number,
// and its path under the mount (a suffix such as "/orders/inbox/a.parquet"),
// used when fdinfo has no ino: line.
type descriptorCheck struct {
	mntID uint64
	ino   uint64
	path  string
	mode  fdinfoIno
}

// holdsWriteDescriptor reports whether the process of thread tid has a
// descriptor open for writing on the file c describes (see the comment
// above). It reads /proc/<pid>/fdinfo (and, without ino: lines,
// /proc/<pid>/fd), which never sends a request to this mount. Unknown
// answers are "no": the close is then the last, and returns the outcome.
// go-fuse numbers inodes from 2^63 up, so another file system's inode
// does not match; another deltafs mount's can, hence mnt_id.
func holdsWriteDescriptor(tid uint32, c descriptorCheck) bool {
	pid := tgid(tid)
	if pid == 0 {
		return false
	}
	base := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	ents, err := os.ReadDir(base + "/fdinfo")
	if err != nil {
		return false
	}
	for _, e := range ents {
		data, err := os.ReadFile(base + "/fdinfo/" + e.Name())
		if err == nil && c.matches(data, func() string {
			target, _ := os.Readlink(base + "/fd/" + e.Name())
			return target
		}) {
			return true
		}
	}
	return false
}

// matches reports whether the descriptor of fdinfo data (its path from
// link, asked only when needed) is open for writing on c's file.
func (c descriptorCheck) matches(data []byte, link func() string) bool {
	flags, ok := fdinfoField(data, "flags")
	if !ok {
		return false
	}
	fl, err := strconv.ParseUint(flags, 8, 64)
	if err != nil || fl&syscall.O_ACCMODE == syscall.O_RDONLY {
		return false
	}
	if c.mntID != 0 {
		if m, ok := fdinfoField(data, "mnt_id"); !ok || m != strconv.FormatUint(c.mntID, 10) {
			return false
		}
	}
	if c.mode == fdinfoHasIno {
		ino, ok := fdinfoField(data, "ino")
		return ok && ino == strconv.FormatUint(c.ino, 10)
	}
	// No inode number: the path the kernel shows for the descriptor. It is
	// relative to the process's root, so only its end is compared; a
	// descriptor whose path cannot be read is not seen.
	target := link()
	return c.path != "" && strings.HasSuffix(target, c.path)
}
