package mount

import (
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/nodes"
	"github.com/deltafs/deltafs/serve"
)

// ownerOverride is a table's source permissions with the owner or group
// replaced where the user named one (--uid, --gid): the modes stay the
// source's, so a 0600 file stays its owner's alone, shown as the named
// user's.
type ownerOverride struct {
	nodes.Perms
	uid, gid *uint32 // nil: the source's
}

func (o ownerOverride) apply(p serve.Perm, err error) (serve.Perm, error) {
	if o.uid != nil {
		p.UID = *o.uid
	}
	if o.gid != nil {
		p.GID = *o.gid
	}
	return p, err
}

func (o ownerOverride) TablePerm() (serve.Perm, error) { return o.apply(o.Perms.TablePerm()) }
func (o ownerOverride) LogPerm() (serve.Perm, error)   { return o.apply(o.Perms.LogPerm()) }
func (o ownerOverride) FilePerm(f *delta.LiveFile) (serve.Perm, error) {
	return o.apply(o.Perms.FilePerm(f))
}

// mirrorPerms makes a local table's entries show their sources' owners
// and modes when other users may use the mount (AllowOther): the kernel
// then lets each user read what that user could read on the source, and
// append only where that user could write _delta_log. A table in an
// object store has no owners to mirror: it shows the mount's (UID, GID,
// Umask decide).
func (s *Server) mirrorPerms(d *nodes.TableDir, files *serve.Table, uidSet, gidSet bool) {
	if !s.cfg.AllowOther || !files.Local() {
		return
	}
	o := ownerOverride{Perms: files}
	if uidSet {
		o.uid = &s.cfg.UID
	}
	if gidSet {
		o.gid = &s.cfg.GID
	}
	d.MirrorPerms(o)
}
