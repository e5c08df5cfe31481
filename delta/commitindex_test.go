package delta

import (
	"testing"
	"time"
)

// The compact commit index must answer exactly what a map of LogFiles
// did: one entry per version (a version listed twice, as merged listings
// do, kept once with the newer file), keys rebuilt, odd names kept.
func TestCommitIndex(t *testing.T) {
	mk := func(v, size int64, key string) LogFile {
		if key == "" {
			key = canonicalCommitKey(v)
		}
		return LogFile{ObjectInfo: ObjectInfo{Key: key, Size: size, ModTime: time.UnixMilli(1000 * v)}, Kind: KindCommit, Version: v}
	}
	a := &commitIndex{}
	for v := int64(0); v < 5; v++ {
		a.add(mk(v, 10+v, ""))
	}
	a.finish()
	b := &commitIndex{}
	b.add(mk(4, 99, ""))
	b.add(mk(5, 15, "_delta_log/5.json"))
	b.add(mk(7, 17, ""))
	b.finish()
	m := a.merged(b)
	if m.len() != 7 {
		t.Fatalf("merged index has %d entries, want 7 (0-5, 7)", m.len())
	}
	if f, ok := m.get(4); !ok || f.Size != 99 {
		t.Errorf("version 4: %+v %v, want the newer listing's size 99", f, ok)
	}
	if f, ok := m.get(5); !ok || f.Key != "_delta_log/5.json" {
		t.Errorf("version 5 key = %q, want the odd name kept", f.Key)
	}
	if _, ok := m.get(6); ok {
		t.Error("version 6 found in an index without it")
	}
	if f, _ := m.get(7); f.Key != canonicalCommitKey(7) || !f.ModTime.Equal(time.UnixMilli(7000)) {
		t.Errorf("version 7 rebuilt as %+v", f)
	}
	var got []int64
	m.versions(func(i int, v int64) { got = append(got, v) })
	if len(got) != 7 || got[5] != 5 || got[6] != 7 {
		t.Errorf("versions = %v", got)
	}
	// Equal times are made strictly increasing.
	c := &commitIndex{}
	for v := int64(0); v < 3; v++ {
		f := mk(v, 1, "")
		f.ModTime = time.UnixMilli(5000)
		c.add(f)
	}
	c.finish()
	if c.monotonicMs(0) != 5000 || c.monotonicMs(1) != 5001 || c.monotonicMs(2) != 5002 {
		t.Errorf("monotonic times %d %d %d, want 5000 5001 5002", c.monotonicMs(0), c.monotonicMs(1), c.monotonicMs(2))
	}
}
