package pqfile

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The page filter's large buffers (a column chunk's output, a row group's) are new memory the
// first time a process rewrites a file, and again after the runtime gave idle memory back to
// the kernel. Faulted in 4 KiB at a time, a 64 MiB file's buffers cost thousands of page
// faults: 11 us each on the project's test VM, whose page faults trap to the host (a fraction of
// that on bare metal). Transparent huge pages, where the kernel offers them only on request (the
// "madvise" mode, the default of most distributions), fault such a buffer in 2 MiB at a time: the
// first read of a DV'd 64 MiB file through a fresh mount took 20-35% less (docs/benchmarks.md).

// hugePage is the size of a transparent huge page with 4 KiB base pages (amd64, arm64).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the 2 MiB-aligned interior of b's capacity with
// transparent huge pages when it is first touched. It changes nothing b holds, and nothing at
// all where the kernel has no huge pages to give or b is under 2 MiB; b stays memory of the Go
// heap, freed by the garbage collector.
func adviseHuge(b []byte) {
	if cap(b) < hugePage {
		return
	}
	b = b[:cap(b)]
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + hugePage - 1) &^ (hugePage - 1)
	hi := (start + uintptr(len(b))) &^ (hugePage - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_HUGEPAGE)
}
