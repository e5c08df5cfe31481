package pqfile

import (
	"os"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The page filter's large buffers (a column chunk's output, a row group's) are new memory the
// first time a process rewrites a file, and again after the runtime gave idle memory back to
// the kernel. Faulted in 4 KiB at a time, a 64 MiB file's buffers cost thousands of page
// faults, each a trap to the host on a VM. Transparent huge pages, where the kernel offers them
// only on request (the "madvise" mode, the default of most distributions), fault such a buffer
// in 2 MiB at a time, which shortens a fresh mount's first read of a DV'd file; newBuf allocates
// whole, aligned huge pages so that no part of a buffer is left to 4 KiB faults.

// hugePage is the size of a transparent huge page with 4 KiB base pages (amd64, arm64).
const hugePage = 2 << 20

// The advice outlives the buffer: it marks the heap's address range, which the runtime later
// reuses for other objects, and the kernel's khugepaged may then collapse a sparsely used 2 MiB
// of it into a whole huge page (resident memory the runtime meant to give back). So only the
// free list's buffers are advised, and the list takes the advice back (unadviseHuge) when it
// lets a buffer go: what stays advised is about what the list keeps and hands out.

// newBuf returns an empty buffer of capacity at least n for the free lists. Where the kernel
// gives huge pages on request and n is at least one, the buffer is whole huge pages, aligned to
// them and advised: faulted in with one fault per 2 MiB, where a buffer placed anywhere in the
// heap has only its aligned interior so (a 7 MiB chunk's output kept up to 3 MiB of 4 KiB
// faults). The capacity is rounded up to the next 2 MiB (at most that much more resident once
// filled), and the 2 MiB more allocated for the alignment is not touched unless the runtime
// hands out memory that must be zeroed. Elsewhere, make.
func newBuf(n int) []byte {
	if n < hugePage || !thpOnRequest() {
		return make([]byte, 0, n)
	}
	size := (n + hugePage - 1) &^ (hugePage - 1)
	raw := make([]byte, size+hugePage)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	off := int((start+hugePage-1)&^(hugePage-1) - start)
	b := raw[off : off : off+size]
	adviseHuge(b)
	return b
}

// adviseHuge asks the kernel to back the 2 MiB-aligned interior of b's capacity with
// transparent huge pages when it is first touched, where the kernel gives them on request. It
// changes nothing b holds, and nothing at all where the kernel gives huge pages to all memory or
// to none, or b is under 2 MiB; b stays memory of the Go heap, freed by the garbage collector.
func adviseHuge(b []byte) {
	if lo, hi, ok := hugeInterior(b); ok {
		_ = unix.Madvise(b[:cap(b)][lo:hi], unix.MADV_HUGEPAGE)
	}
}

// unadviseHuge takes back adviseHuge's advice on b, which the caller lets go: MADV_NOHUGEPAGE,
// which where huge pages come on request only is what the range had before.
func unadviseHuge(b []byte) {
	if lo, hi, ok := hugeInterior(b); ok {
		_ = unix.Madvise(b[:cap(b)][lo:hi], unix.MADV_NOHUGEPAGE)
	}
}

// hugeInterior returns the 2 MiB-aligned part of b's capacity, as offsets into it, when the
// kernel gives huge pages on request (thpOnRequest) and there is such a part.
func hugeInterior(b []byte) (lo, hi uintptr, ok bool) {
	if cap(b) < hugePage || !thpOnRequest() {
		return 0, 0, false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)])))
	lo = (start+hugePage-1)&^(hugePage-1) - start
	hi = (start+uintptr(cap(b)))&^(hugePage-1) - start
	return lo, hi, hi > lo
}

// thpOnRequest reports whether the kernel gives transparent huge pages to the ranges advised
// for them only (/sys/kernel/mm/transparent_hugepage/enabled reads "[madvise]"): under
// "always" the buffers get them anyway, under "never" or without THP not at all.
var thpOnRequest = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && strings.Contains(string(b), "[madvise]")
})
