//go:build !linux

package pqfile

// adviseHuge does nothing where the kernel takes no huge page advice (hugebuf_linux.go).
func adviseHuge([]byte) {}

// unadviseHuge does nothing either.
func unadviseHuge([]byte) {}

// newBuf returns an empty buffer of capacity n.
func newBuf(n int) []byte { return make([]byte, 0, n) }
