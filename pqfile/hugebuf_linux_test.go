package pqfile

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vmFlags returns the VmFlags of the mapping holding addr, from /proc/self/smaps.
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(strings.Fields(line)[0], "%x-%x", &lo, &hi); n == 2 && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// TestAdviseHugeMarksTheBuffer checks that a large buffer's aligned interior is advised for huge
// pages (the "hg" flag of its mapping) and that its bytes are what they were.
func TestAdviseHugeMarksTheBuffer(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("the kernel has no transparent huge pages")
	}
	b := make([]byte, 0, 6<<20)
	b = append(b, "some bytes"...)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mid := (start + hugePage) &^ (hugePage - 1) // inside the aligned interior
	// An earlier run's buffer at this address left its advice: take it back first.
	if err := unix.Madvise(b[:cap(b)][mid-start:mid-start+hugePage], unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	if fl := vmFlags(t, mid); contains(fl, "hg") || !contains(fl, "nh") {
		t.Fatalf("mapping at %#x: VmFlags %v after MADV_NOHUGEPAGE", mid, fl)
	}
	adviseHuge(b)
	if fl := vmFlags(t, mid); !contains(fl, "hg") || contains(fl, "nh") {
		t.Errorf("mapping at %#x not advised for huge pages: VmFlags %v", mid, fl)
	}
	if string(b) != "some bytes" {
		t.Errorf("bytes changed: %q", b)
	}
	small := make([]byte, 1<<20)
	adviseHuge(small) // under 2 MiB: no aligned interior to advise; must not fail
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
