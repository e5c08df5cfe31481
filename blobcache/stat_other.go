//go:build !linux

package blobcache

import (
	"os"
	"syscall"
)

// statCtime returns the ctime and inode of fi, when the platform has them.
func statCtime(fi os.FileInfo) (sec, nsec, ino int64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return int64(st.Ctimespec.Sec), int64(st.Ctimespec.Nsec), int64(st.Ino), true
}
