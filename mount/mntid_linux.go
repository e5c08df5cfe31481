package mount

import "golang.org/x/sys/unix"

// learnMountID tells the tree the kernel's mnt_id of the mount, which
// tells the inbox's descriptors apart from those of another deltafs
// mount with the same inode numbers (inbox.Env.SetMountID). Unknown, the
// inbox matches inode numbers only. A read-only mount has no inbox.
func (s *Server) learnMountID() {
	if s.inboxEnv == nil {
		return
	}
	if !s.inboxEnv.FdinfoHasIno() {
		s.cfg.Logger.Warn("deltafs: this kernel's /proc/PID/fdinfo has no ino: line (Linux < 5.14): "+
			"a dup of an inbox file's write descriptor is recognized by its path in /proc/PID/fd; "+
			"a writer that sees the mount under another path (another mount namespace, a chroot) "+
			"gets its file committed at the first close of any of its descriptors, "+
			"with that close() returning the outcome and later writes failing with EROFS",
			"mountpoint", s.cfg.Mountpoint)
	}
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, s.cfg.Mountpoint, 0, unix.STATX_MNT_ID, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		s.cfg.Logger.Debug("deltafs: mount id unknown", "mountpoint", s.cfg.Mountpoint, "err", err)
		return
	}
	s.inboxEnv.SetMountID(stx.Mnt_id)
}
