package mount

import "golang.org/x/sys/unix"

// learnMountID tells the tree the kernel's mnt_id of the mount, which
// tells the inbox's descriptors apart from those of another deltafs
// mount with the same inode numbers (nodes.Env.SetMountID). Unknown, the
// inbox matches inode numbers only.
func (s *Server) learnMountID() {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, s.cfg.Mountpoint, 0, unix.STATX_MNT_ID, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		s.cfg.Logger.Debug("deltafs: mount id unknown", "mountpoint", s.cfg.Mountpoint, "err", err)
		return
	}
	s.env.SetMountID(stx.Mnt_id)
}
