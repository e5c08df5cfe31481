// Package durable is the one write path of every local file deltafs
// writes and relies on (data files, commits, checkpoints,
// _last_checkpoint, the disk cache): each is written under a temporary
// name, fsynced, put in place and its directory fsynced before the call
// returns, so that nothing refers to a file a power loss can empty.
// Files are created with mode 0666 and directories 0777, less the
// process's umask (as cp, Spark or pandas create theirs), so that other
// users the umask lets in can read what deltafs commits.
package durable

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// FileMode and DirMode are the modes asked for; the umask clears bits.
const (
	FileMode os.FileMode = 0o666
	DirMode  os.FileMode = 0o777
)

// SyncDir fsyncs the directory dir, so that a create, rename or link in
// it survives a power loss (fsync of a file does not cover its name).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SyncFileAndDir fsyncs f and the directory holding path (f's name).
func SyncFileAndDir(f *os.File, path string) error {
	if err := f.Sync(); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

var tempSeq atomic.Uint64

// CreateTemp creates a new file in dir named prefix + a unique part +
// suffix, with mode FileMode less the umask (os.CreateTemp's is 0600:
// a file linked into a table from it was unreadable to other users).
func CreateTemp(dir, prefix, suffix string) (*os.File, error) {
	for {
		name := filepath.Join(dir, prefix+strconv.FormatInt(time.Now().UnixNano(), 36)+"-"+
			strconv.FormatUint(tempSeq.Add(1), 36)+"-"+strconv.Itoa(os.Getpid())+suffix)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
}

// MkdirAll makes dir and its missing parents (DirMode less the umask)
// and fsyncs the parent of each directory it made, so that a file put
// there later is not lost with its directory.
func MkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, DirMode); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		return err
	}
	return SyncDir(parent)
}

// ErrExists is returned by Write with Exclusive when path exists.
var ErrExists = os.ErrExist

// How Write puts the file in place.
type How int

const (
	// Exclusive links the file to path, failing with ErrExists (atomically)
	// when path exists: put-if-absent.
	Exclusive How = iota
	// Replace renames the file over path.
	Replace
)

// Write writes r's bytes to path: into a temporary file beside it
// (FileMode less the umask), fsynced, linked or renamed into place (how),
// and the directory fsynced, making missing directories first. When it
// returns nil the file and its name survive a power loss; on error
// nothing new is at path (for Exclusive) and no temporary file is left.
// It returns the bytes written.
func Write(path string, r io.Reader, how How) (int64, error) {
	dir := filepath.Dir(path)
	if err := MkdirAll(dir); err != nil {
		return 0, err
	}
	tmp, err := CreateTemp(dir, "."+filepath.Base(path)+".", ".tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after a link, the name only; after a rename, nothing
	n, err := io.Copy(tmp, r)   // copy_file_range when r is a file
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	if how == Exclusive {
		err = os.Link(tmp.Name(), path)
	} else {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return n, err
	}
	return n, SyncDir(dir)
}

// Link links the file f (named by its path f.Name() or src) to path,
// which must not exist (ErrExists), making missing directories, and
// fsyncs the file and the directory. The file keeps its mode: create it
// with CreateTemp (or mode FileMode) so that other users can read it.
func Link(f *os.File, src, path string) error {
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	if err := os.Link(src, path); err != nil {
		return err
	}
	if err := SyncFileAndDir(f, path); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}
