package pqfile

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
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

// hugeFlags returns whether the mapping holding addr is advised for huge pages ("hg") and
// advised against them ("nh").
func hugeFlags(t *testing.T, addr uintptr) (hg, nh bool) {
	fl := vmFlags(t, addr)
	return contains(fl, "hg"), contains(fl, "nh")
}

// TestAdviseHugeMarksTheBuffer checks that a large buffer's aligned interior is advised for huge
// pages (the "hg" flag of its mapping) where the kernel gives them on request, that the advice
// is taken back (unadviseHuge, and a free list dropping the buffer), and that the bytes stay.
func TestAdviseHugeMarksTheBuffer(t *testing.T) {
	if !thpOnRequest() {
		// Under "always" or "never" the advice is not needed or not heeded: none is given.
		b := make([]byte, 0, 6<<20)
		if _, _, ok := hugeInterior(b); ok {
			t.Fatal("an interior to advise where the kernel does not give huge pages on request")
		}
		return
	}
	b := make([]byte, 0, 6<<20)
	b = append(b, "some bytes"...)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mid := (start + hugePage) &^ (hugePage - 1) // inside the aligned interior
	// An earlier run's buffer at this address left its flags: start from taken-back advice.
	unadviseHuge(b)
	if hg, nh := hugeFlags(t, mid); hg || !nh {
		t.Fatalf("mapping at %#x: hg %v nh %v after unadviseHuge", mid, hg, nh)
	}
	adviseHuge(b)
	if hg, nh := hugeFlags(t, mid); !hg || nh {
		t.Errorf("mapping at %#x not advised for huge pages: hg %v nh %v", mid, hg, nh)
	}
	if string(b) != "some bytes" {
		t.Errorf("bytes changed: %q", b)
	}
	unadviseHuge(b)
	if hg, _ := hugeFlags(t, mid); hg {
		t.Errorf("mapping at %#x still advised after unadviseHuge", mid)
	}
	small := make([]byte, 1<<20)
	if _, _, ok := hugeInterior(small); ok {
		t.Error("a 1 MiB buffer has no 2 MiB-aligned interior")
	}

	// A list hands out advised buffers and takes the advice back from those it drops.
	l := &bufList{maxBufs: 1, maxBytes: 64 << 20}
	held := l.get(6 << 20)
	addr := (uintptr(unsafe.Pointer(unsafe.SliceData((*held)[:1]))) + hugePage) &^ (hugePage - 1)
	if hg, _ := hugeFlags(t, addr); !hg {
		t.Fatalf("a new list buffer at %#x is not advised", addr)
	}
	other := l.get(6 << 20)
	l.Put(held)
	l.Put(other) // over maxBufs: held is dropped
	if hg, _ := hugeFlags(t, addr); hg {
		t.Errorf("a buffer the list dropped, at %#x, is still advised", addr)
	}
	runtime.KeepAlive(held)
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestNewBufIsWholeHugePages checks the free lists' buffers where the kernel gives huge pages on
// request: a buffer of at least 2 MiB starts on a huge page boundary and is whole huge pages,
// every one of them advised (so that each faults in once); a smaller one is plain memory.
func TestNewBufIsWholeHugePages(t *testing.T) {
	for _, n := range []int{1 << 20, hugePage, hugePage + 1, 7<<20 + 12345} {
		b := newBuf(n)
		if len(b) != 0 || cap(b) < n {
			t.Fatalf("newBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
		if !thpOnRequest() || n < hugePage {
			if cap(b) != n {
				t.Errorf("newBuf(%d): cap %d, want exactly %d (no huge pages to align to)", n, cap(b), n)
			}
			continue
		}
		start := uintptr(unsafe.Pointer(unsafe.SliceData(b[:1])))
		if start%hugePage != 0 || cap(b)%hugePage != 0 || cap(b) >= n+hugePage {
			t.Fatalf("newBuf(%d): start %#x cap %d: not the whole huge pages holding n bytes", n, start, cap(b))
		}
		for p := start; p < start+uintptr(cap(b)); p += hugePage {
			if hg, nh := hugeFlags(t, p); !hg || nh {
				t.Errorf("newBuf(%d): huge page at %#x not advised: hg %v nh %v", n, p, hg, nh)
			}
		}
		b = append(b, make([]byte, cap(b))...) // fills it without moving
		if uintptr(unsafe.Pointer(unsafe.SliceData(b))) != start {
			t.Errorf("newBuf(%d): filling it to its capacity moved it", n)
		}
		unadviseHuge(b)
	}
}
