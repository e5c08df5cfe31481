package pqfile

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestBufListReuse: get takes the smallest kept buffer that fits (not one more than twice the
// size asked), Put keeps the latest buffers within the bounds, and a buffer released twice is
// handed out once; kept buffers survive a garbage collection.
func TestBufListReuse(t *testing.T) {
	l := &bufList{maxBufs: 3, maxBytes: 1 << 20}
	a, b, c := l.get(100<<10), l.get(200<<10), l.get(300<<10)
	if cap(*a) < 100<<10 || cap(*b) < 200<<10 || cap(*c) < 300<<10 {
		t.Fatalf("capacities %d %d %d", cap(*a), cap(*b), cap(*c))
	}
	*a = append(*a, 1, 2, 3)
	l.Put(a)
	l.Put(a) // a second release must not make a available twice
	l.Put(c)
	l.Put(b)
	runtime.GC()
	runtime.GC()
	if got := l.get(150 << 10); got != b {
		t.Errorf("get(150K) = buffer of %d bytes, want b (%d)", cap(*got), cap(*b))
	}
	if got := l.get(90 << 10); got != a || len(*got) != 0 {
		t.Errorf("get(90K) = buffer of %d bytes (len %d), want a emptied", cap(*got), len(*got))
	}
	if got := l.get(90 << 10); got == a || got == c {
		t.Errorf("get(90K) handed out a again, or c (over twice the size asked)")
	}
	if got := l.get(250 << 10); got != c {
		t.Errorf("get(250K) = buffer of %d bytes, want c", cap(*got))
	}

	// Bounds: a buffer over maxBytes is not kept; the oldest go to make room.
	l.Put(&[]byte{}) // empty: ignored
	big := make([]byte, 0, 2<<20)
	l.Put(&big)
	x, y, z := l.get(400<<10), l.get(400<<10), l.get(400<<10)
	l.Put(x)
	l.Put(y)
	l.Put(z) // 3 x 400K > 1 MiB: x is dropped
	if len(l.bufs) != 2 || l.bufs[0] != y || l.bufs[1] != z || l.bytes != cap(*y)+cap(*z) {
		t.Errorf("kept %d buffers (%d bytes), want y and z", len(l.bufs), l.bytes)
	}
}

// TestBufListConcurrent: buffers handed out at the same time are never the same buffer, under
// the race detector too.
func TestBufListConcurrent(t *testing.T) {
	l := &bufList{maxBufs: 4, maxBytes: 1 << 20}
	var mu sync.Mutex
	inUse := map[*[]byte]bool{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				b := l.get(1024 * (1 + (g+i)%4))
				mu.Lock()
				shared := inUse[b]
				inUse[b] = true
				mu.Unlock()
				if shared {
					t.Error("a buffer was handed to two users at once")
					return
				}
				*b = append(*b, byte(g)) // a write the race detector sees
				mu.Lock()
				delete(inUse, b)
				mu.Unlock()
				l.Put(b)
			}
		}()
	}
	wg.Wait()
	seen := map[*[]byte]bool{}
	for _, b := range l.bufs {
		if seen[b] {
			t.Fatal("the list holds a buffer twice")
		}
		seen[b] = true
	}
}

// TestFreeList: values come back once each, the list holds at most max of them.
func TestFreeList(t *testing.T) {
	l := freeList[*scratch]{max: 2}
	if _, ok := l.get(); ok {
		t.Fatal("empty list returned a value")
	}
	a, b, c := new(scratch), new(scratch), new(scratch)
	l.put(a)
	l.put(a)
	l.put(b)
	l.put(c) // full: dropped
	got := map[*scratch]bool{}
	for {
		s, ok := l.get()
		if !ok {
			break
		}
		if got[s] {
			t.Fatal("a scratch came back twice")
		}
		got[s] = true
	}
	if len(got) != 2 || !got[a] || !got[b] {
		t.Errorf("got %d scratches back, want a and b", len(got))
	}
}

// TestSizeClass: classes are at least the size asked and less than an eighth more.
func TestSizeClass(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 4097, 100 << 10, 1<<20 - 1, 1 << 20, 27_000_000, 28 << 20} {
		c := sizeClass(n)
		if c < n || (n > 4096 && c-n > n/8) {
			t.Errorf("sizeClass(%d) = %d", n, c)
		}
	}
}

// TestFreeListsReleaseWhenIdle: buffers and values kept by the free lists are dropped once the
// lists are unused for their idle period, and kept while they are used.
func TestFreeListsReleaseWhenIdle(t *testing.T) {
	idle := idleClock{period: 100 * time.Millisecond}
	bl := &bufList{maxBufs: 4, maxBytes: 1 << 20, idle: idle}
	bl.Put(bl.get(1000))
	fl := &freeList[*int]{max: 2, idle: idle}
	fl.put(new(int))
	kept := func() (int, int) {
		bl.mu.Lock()
		fl.mu.Lock()
		defer bl.mu.Unlock()
		defer fl.mu.Unlock()
		return len(bl.bufs), len(fl.items)
	}
	for range 4 { // used every 40 ms: nothing is dropped
		time.Sleep(40 * time.Millisecond)
		bl.Put(bl.get(1000))
		x, _ := fl.get()
		fl.put(x)
	}
	if b, v := kept(); b != 1 || v != 1 {
		t.Fatalf("while in use: %d buffers and %d values kept, want 1 and 1", b, v)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, v := kept(); b == 0 && v == 0 {
			break
		}
		if time.Now().After(deadline) {
			b, v := kept()
			t.Fatalf("idle for 5 s: %d buffers and %d values still kept", b, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	bl.Put(bl.get(1000)) // usable again after the release
	if b, _ := kept(); b != 1 {
		t.Fatalf("after the release: %d buffers kept, want 1", b)
	}
}
