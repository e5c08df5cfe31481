//go:build !linux

package fs

import "syscall"

func statCtime(st *syscall.Stat_t) syscall.Timespec { return st.Ctimespec }
