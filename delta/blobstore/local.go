package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// Local roots are read with the os package, not fileblob: fileblob opens
// a metadata sidecar (NAME.attrs) beside every object it reads or stats,
// which for a log of 100,000 commits was 200,000 extra opens; and it would
// follow a symbolic link or block on a FIFO named like an object. Here the
// last path component is opened with O_NOFOLLOW and O_NONBLOCK, and only a
// regular file is read.

// localPath returns the file of key under the root.
func (s *Store) localPath(key string) string {
	return filepath.Join(s.local, filepath.FromSlash(key))
}

// openLocal opens key for reading, refusing anything but a regular file.
func (s *Store) openLocal(op, key string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(s.localPath(key), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if isLoop(err) {
			return nil, nil, fmt.Errorf("%s %s: %w (a symbolic link, not an object)", op, s.where.at(key), delta.ErrNotExist)
		}
		return nil, nil, s.wrap(op, key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, s.wrap(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s %s: %w (%s, not a regular file)", op, s.where.at(key), delta.ErrNotExist, fi.Mode().Type())
	}
	return f, fi, nil
}

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// statLocal is Stat of a local root.
// It is one lstat, not an open (a history stats every commit): a
// symbolic link or anything but a regular file is not an object, as for
// openLocal.
func (s *Store) statLocal(key string) (delta.ObjectInfo, error) {
	fi, err := os.Lstat(s.localPath(key))
	if err != nil {
		return delta.ObjectInfo{}, s.wrap("stat", key, err)
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return delta.ObjectInfo{}, fmt.Errorf("stat %s: %w (a symbolic link, not an object)", s.where.at(key), delta.ErrNotExist)
	case !fi.Mode().IsRegular():
		return delta.ObjectInfo{}, fmt.Errorf("stat %s: %w (%s, not a regular file)", s.where.at(key), delta.ErrNotExist, fi.Mode().Type())
	}
	return delta.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// readLocal is ReadRange of a local root.
func (s *Store) readLocal(key string, off, length int64) (io.ReadCloser, error) {
	f, fi, err := s.openLocal("read", key)
	if err != nil {
		return nil, err
	}
	if off > fi.Size() {
		f.Close()
		return nil, fmt.Errorf("read %s: offset %d beyond the object's %d bytes", s.where.at(key), off, fi.Size())
	}
	n := fi.Size() - off
	if length >= 0 && length < n {
		n = length
	}
	return &localReader{f: f, r: io.NewSectionReader(f, off, n), info: delta.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}}, nil
}

type localReader struct {
	f    *os.File
	r    *io.SectionReader
	info delta.ObjectInfo // from the open's fstat
}

var _ delta.InfoReader = (*localReader)(nil)

// ObjectInfo returns the file's size and time when it was opened.
func (r *localReader) ObjectInfo() delta.ObjectInfo { return r.info }

func (r *localReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *localReader) Close() error               { return r.f.Close() }

// listDirsLocal is ListDirs of a local root: the directories' names as
// they are (fileblob would report a name holding "__0x41__" as "A"), and
// no symbolic link to a directory, which would lead out of the root.
func (s *Store) listDirsLocal(dir string) ([]string, error) {
	ents, err := os.ReadDir(s.localPath(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, s.wrap("list", dir, err)
	}
	var out []string
	for _, e := range ents { // sorted by name
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

var _ delta.NameLister = (*Store)(nil)

// ListNames implements delta.NameLister: for a local root, the regular
// files of the directory by the types getdents reports (symbolic links and
// other non-regular files are left out, as List leaves them out), with no
// stat; remote stores report ok = false.
func (s *Store) ListNames(ctx context.Context, dir, from string) ([]string, bool, error) {
	if s.local == "" {
		return nil, false, nil
	}
	path := filepath.Join(s.local, filepath.FromSlash(dir))
	if names, ok := s.tails.get(path, from); ok {
		return names, true, nil
	}
	start := time.Now()
	out, err := readDirNames(path, from)
	if err != nil {
		return nil, true, s.wrap("list", dir, err)
	}
	s.tails.put(path, from, start, out)
	return out, true, nil
}

// readDirNames returns the names of the regular files of dir from from on,
// sorted. It reads the directory unsorted and sorts only what it keeps: a
// refresh lists a long log's directory for its last few names, and
// os.ReadDir's sort of every entry was most of that listing's cost.
func readDirNames(dir, from string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Name() >= from && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}
