//go:build !linux

package main

import "golang.org/x/sys/unix"

// detachFlag is the nearest to Linux's MNT_DETACH for --lazy: a forced
// unmount.
const detachFlag = unix.MNT_FORCE

// mountOf is not known here (no /proc/self/mountinfo): the mount and
// unmount calls report for themselves.
func mountOf(string) (mountInfo, error) { return mountInfo{}, nil }
