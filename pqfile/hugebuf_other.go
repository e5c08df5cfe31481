//go:build !linux

package pqfile

// adviseHuge does nothing where the kernel takes no huge page advice (hugebuf_linux.go).
func adviseHuge([]byte) {}

// unadviseHuge does nothing either.
func unadviseHuge([]byte) {}
