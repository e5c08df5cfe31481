package blobcache

import "syscall"

func statCtim(st *syscall.Stat_t) syscall.Timespec { return st.Ctim }
