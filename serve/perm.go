package serve

// Perm: the owner, group and mode of a local source, mirrored with
// --allow-other.

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/delta"
)

// Perm is the owner, group and permission bits (with setuid, setgid and
// sticky) of a local source: the table's directory, its _delta_log, a data
// file. A mount shared with other users (--allow-other) shows each entry
// with its source's, so that the kernel lets a user read exactly what
// that user could read on the source.
type Perm struct {
	UID, GID uint32
	Mode     uint32 // permission bits only: Mode &^ 0o7777 == 0
}

func permOf(st *unix.Stat_t) Perm {
	return Perm{UID: st.Uid, GID: st.Gid, Mode: uint32(st.Mode) & 0o7777}
}

// Local reports whether the table's files are in a local directory, whose
// owners and modes TablePerm, LogPerm and FilePerm report. An object
// store has none.
func (t *Table) Local() bool { return t.root != nil }

// TablePerm returns the Perm of the table's directory.
func (t *Table) TablePerm() (Perm, error) {
	return t.statRoot("")
}

// LogPerm returns the Perm of the table's _delta_log directory: whoever
// may write it may commit to the table on the source.
func (t *Table) LogPerm() (Perm, error) {
	return t.statRoot(delta.LogDir)
}

// FilePerm returns the Perm of the stored data file of f, resolved as a
// read of it is (beneath the table's directory, no symbolic link).
func (t *Table) FilePerm(f *delta.LiveFile) (Perm, error) {
	if t.root == nil {
		return Perm{}, fmt.Errorf("data file %s: not a local table", f.Key)
	}
	fd, _, err := t.root.openFD(f.Key)
	if err != nil {
		return Perm{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Perm{}, fmt.Errorf("data file %s: %w", f.Key, err)
	}
	return permOf(&st), nil
}

// statRoot returns the Perm of name, a directory directly in the table's
// directory ("": the directory itself), not following a symbolic link.
func (t *Table) statRoot(name string) (Perm, error) {
	if t.root == nil {
		return Perm{}, fmt.Errorf("table %s: not a local table", t.name)
	}
	root, err := t.root.file()
	if err != nil {
		return Perm{}, fmt.Errorf("table %s: %w", t.name, err)
	}
	defer runtime.KeepAlive(root)
	var st unix.Stat_t
	if name == "" {
		err = unix.Fstat(int(root.Fd()), &st)
	} else {
		err = unix.Fstatat(int(root.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return Perm{}, fmt.Errorf("table %s: stat %q: %w", t.name, name, err)
	}
	return permOf(&st), nil
}
