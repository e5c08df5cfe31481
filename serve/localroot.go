package serve

// localRoot: a local table's directory held open for the files resolved
// beneath it, followed when the table is replaced.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// localRoot is a local table's directory, held open for the openat2 calls
// that resolve its files beneath it (a stat of every file of a listing
// would otherwise open and close the directory each time), and opened
// again when its path names another directory: a table replaced under
// the mount is followed within rootRecheck, as its log is at its next
// refresh.
type localRoot struct {
	dir string

	mu       sync.Mutex
	f        *os.File  // guarded by mu; a replaced one is closed by the GC once unused
	dev, ino uint64    // guarded by mu: f's identity
	checked  time.Time // guarded by mu: when dir last named f
}

// rootRecheck is how often localRoot checks that its path still names the
// directory it holds: a stat of a long path per file opened costs as much
// as the open.
const rootRecheck = time.Second

// file returns the open directory, checked within rootRecheck to be the
// one dir names. The caller keeps it alive (runtime.KeepAlive) while it
// uses its descriptor.
func (r *localRoot) file() (*os.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.f != nil && now.Sub(r.checked) < rootRecheck {
		return r.f, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(r.dir, &st); err != nil {
		return nil, err
	}
	if r.f != nil && r.dev == uint64(st.Dev) && r.ino == uint64(st.Ino) {
		r.checked = now
		return r.f, nil
	}
	f, err := os.Open(r.dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	// Not closed: a concurrent open may be using it; the GC closes it.
	r.f, r.dev, r.ino, r.checked = f, uint64(st.Dev), uint64(st.Ino), now
	return f, nil
}

// openFD opens key below the root (openLocalFD) and returns the
// descriptor, the caller's to close, and the file's size.
func (r *localRoot) openFD(key string) (int, int64, error) {
	root, err := r.file()
	if err != nil {
		return -1, 0, fmt.Errorf("data file %s: table root: %w", key, err)
	}
	fd, size, err := openLocalFD(int(root.Fd()), key)
	runtime.KeepAlive(root)
	return fd, size, err
}

// open opens key below the root as a Content.
func (r *localRoot) open(key string) (*fileContent, error) {
	fd, size, err := r.openFD(key)
	if err != nil {
		return nil, err
	}
	return &fileContent{f: os.NewFile(uintptr(fd), filepath.Join(r.dir, filepath.FromSlash(key))), size: size}, nil
}

// fdReader reads a descriptor with pread(2), without the runtime's poller
// (a footer check opens, reads and closes a file in three calls).
type fdReader int

func (r fdReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pread(int(r), p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}
