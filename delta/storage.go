package delta

import (
	"context"
	"fmt"
	"io"
	"time"
)

// ObjectInfo describes one object of a table's storage.
type ObjectInfo struct {
	// Key is the object's key relative to the table root, '/'-separated,
	// for example "_delta_log/00000000000000000003.json".
	Key     string
	Size    int64
	ModTime time.Time
}

// Storage is the only way the engine reaches a table's bytes. Keys are
// relative to the table root and use '/' as separator. Implementations must
// be safe for concurrent use.
//
// Errors: a missing object is reported with an error that wraps
// ErrNotExist; a lost put-if-absent with one that wraps ErrExists.
type Storage interface {
	// List returns the objects directly under the "directory" dir (a key
	// prefix ending in '/', or "" for the root) whose base name sorts at or
	// after from, in ascending key order. Sub-directories are not returned.
	// Implementations should start the listing at from where the backend
	// allows it, so that listing a long _delta_log from a checkpoint does not
	// enumerate the whole log.
	List(ctx context.Context, dir, from string) ([]ObjectInfo, error)

	// ListDirs returns the names of the immediate sub-directories of dir.
	ListDirs(ctx context.Context, dir string) ([]string, error)

	// Stat returns the object's size and modification time.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// ReadRange returns length bytes of the object starting at off
	// (length < 0: to the end).
	ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)

	// PutIfAbsent atomically creates key with data, or fails with an error
	// wrapping ErrExists when the key already exists. Exactly one of any
	// number of concurrent callers for the same key succeeds.
	PutIfAbsent(ctx context.Context, key string, data []byte) error

	// Put creates or replaces key with the contents of r.
	Put(ctx context.Context, key string, r io.Reader) error

	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error

	// String names the storage for messages (a URL without credentials).
	String() string
}

// KeyChecker is implemented by a Storage that keeps some keys under
// another name than the key itself. CheckKey returns an error wrapping
// ErrUnstorableKey, saying why, for such a key. Writers check every key a
// commit will name before writing it; a Storage that wraps another must
// forward it.
type KeyChecker interface {
	CheckKey(key string) error
}

// CheckKey returns nil when s stores key under exactly that name (a
// Storage that is not a KeyChecker stores every key as it is), else an
// error wrapping ErrUnstorableKey.
func CheckKey(s Storage, key string) error {
	if kc, ok := s.(KeyChecker); ok {
		return kc.CheckKey(key)
	}
	return nil
}

// NameLister is an optional capability of a Storage whose listing is much
// cheaper without sizes and times: a local directory lists with one
// getdents, where sizes and times cost a stat per entry (100,000 stats for
// a log of 100,000 commits). ListNames returns the base names of the
// regular objects directly under dir that sort at or after from, in
// ascending order; ok is false when it would be no cheaper than List
// (object stores, whose listings carry sizes and times at no cost), and
// the caller then lists with List. The log engine lists _delta_log with it
// and stats a commit only when its time is needed.
//
// Wrappers of a Storage must forward it (or not declare it, which costs
// only speed).
type NameLister interface {
	ListNames(ctx context.Context, dir, from string) (names []string, ok bool, err error)
}

// RangeLister is an optional capability of a Storage that can list the
// objects directly under dir whose base names are in [from, to) (to "":
// no end) without enumerating what follows to (an object store listing
// that starts at from and stops at to), in ascending order. The log
// engine lists a long _delta_log in parallel chunks with it. Wrappers of
// a Storage must forward it (or not declare it).
type RangeLister interface {
	ListRange(ctx context.Context, dir, from, to string) ([]ObjectInfo, error)
}

// InfoReader is an optional capability of the readers a Storage's
// ReadRange returns: the object's size and modification time, learnt when
// it was opened (a local file's fstat). The history reads each commit's
// first bytes and so learns its time without a stat of its own. A
// wrapper of a Storage that wraps its readers must forward it.
type InfoReader interface {
	ObjectInfo() ObjectInfo
}

// LocalDirer is an optional capability of a Storage kept in a directory
// of the local file system: LocalDir returns that directory ("" when the
// storage is remote after all). Writers then hard-link or copy files into
// the table in the kernel instead of streaming them through Put, and know
// that a failed link(2) of a commit left nothing behind. Wrappers of a
// Storage must forward it: a wrapper that hides it turns a local table
// into an object store for every writer.
type LocalDirer interface {
	LocalDir() string
}

// LocalDir returns the local directory of s, or "" when s is not a
// LocalDirer (or says it is remote).
func LocalDir(s Storage) string {
	if l, ok := s.(LocalDirer); ok {
		return l.LocalDir()
	}
	return ""
}

// ReadAll reads a whole object.
func ReadAll(ctx context.Context, s Storage, key string) ([]byte, error) {
	rc, err := s.ReadRange(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Limits on log files deltafs reads, checked before a file or
// a line is decoded; a file over one is a corrupt log (ErrCorruptLog)
// naming the limit. A hostile 300 MB commit line was read whole (680 MB
// of memory). One line's limit is action.MaxLineBytes.
//
// MaxLogFileBytes bounds a commit, a JSON or Parquet checkpoint part, or a
// sidecar read whole: 1 GiB (a 1,000,000-file checkpoint part is about
// 100 MB).
var MaxLogFileBytes int64 = 1 << 30

// readSized reads a whole log object whose size a listing reported, and
// fails, wrapping io.ErrUnexpectedEOF, when the storage returns another
// number of bytes: a body cut short without an error must not pass for a
// shorter commit or checkpoint. The failure is transient (not
// ErrCorruptLog). size <= 0 (unknown) skips the check.
func readSized(ctx context.Context, s Storage, key string, size int64) ([]byte, error) {
	if size > MaxLogFileBytes {
		return nil, corruptf("%s is %d bytes, over the limit of %d bytes a log file", key, size, MaxLogFileBytes)
	}
	if size <= 0 && LocalDir(s) != "" {
		// A local log is listed by name, without sizes: a stat (a
		// syscall) gives the size, so that the file is read into one
		// buffer of it.
		if o, err := s.Stat(ctx, key); err == nil {
			size = o.Size
		}
	}
	rc, err := s.ReadRange(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var data []byte
	if size > 0 {
		// The size is known: one buffer of it (and a byte to see a file
		// grown since), not ReadAll's doublings from 512 bytes, whose
		// copies cost a log of 8 KB commits more than reading it.
		data, err = readKnown(rc, size)
	} else {
		data, err = io.ReadAll(io.LimitReader(rc, MaxLogFileBytes+1))
	}
	if err == nil && int64(len(data)) > MaxLogFileBytes {
		return nil, corruptf("%s is over the limit of %d bytes a log file", key, MaxLogFileBytes)
	}
	if err == nil && size > 0 && int64(len(data)) != size {
		err = fmt.Errorf("read %s: got %d bytes, the listing says %d: %w", key, len(data), size, io.ErrUnexpectedEOF)
	}
	return data, err
}

// readKnown reads r, expected to hold size bytes, into one buffer: at
// most size+1 bytes, so that a longer object is seen as such.
func readKnown(r io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, size+1)
	n, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:n], err
}

// ReaderAt adapts one object of a Storage to io.ReaderAt, for format code
// (Parquet footers, deletion vector files) that takes a ReaderAt and a size.
type ReaderAt struct {
	ctx context.Context
	s   Storage
	key string
}

// NewReaderAt returns a ReaderAt over key. Every ReadAt is one ranged read.
func NewReaderAt(ctx context.Context, s Storage, key string) *ReaderAt {
	return &ReaderAt{ctx: ctx, s: s, key: key}
}

// ReadAt implements io.ReaderAt.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	rc, err := r.s.ReadRange(r.ctx, r.key, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}
