package blobcache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// checkChecked checks that f serves exactly data (the trailer hidden).
func checkChecked(t *testing.T, f *DiskFile, data []byte) {
	t.Helper()
	got := make([]byte, len(data))
	if n, err := f.ReadAt(got, 0); n != len(data) || (err != nil && err != io.EOF) || !bytes.Equal(got, data) || f.Size() != int64(len(data)) {
		t.Fatalf("ReadAt = %d, %v (size %d); want the %d built bytes", n, err, f.Size(), len(data))
	}
}

// A discarded checked file stays readable while open, leaves the
// accounting, and is built again by the next call.
func TestDerivedCheckedDiscardRebuilds(t *testing.T) {
	dir := t.TempDir()
	data := randomBytes(5000, 23)
	var builds atomic.Int64
	c := newCache(t, Options{DiskDir: dir})
	ctx := context.Background()
	f, err := c.DerivedChecked(ctx, "key", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	checkChecked(t, f, data)
	if s := c.Stats(); s.DiskBytes != int64(len(data))+checkTrailerLen {
		t.Fatalf("the cache accounts %d bytes, want %d (data and trailer)", s.DiskBytes, len(data)+int(checkTrailerLen))
	}
	f.Discard()
	f.Discard() // idempotent
	if s := c.Stats(); s.DiskBytes != 0 {
		t.Fatalf("after Discard the cache accounts %d bytes, want 0", s.DiskBytes)
	}
	checkChecked(t, f, data)
	f.Close()
	if names := testenv.DirNames(t, dir); len(names) != 0 {
		t.Fatalf("discarded file still on disk: %v", names)
	}
	g, err := c.DerivedChecked(ctx, "key", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	checkChecked(t, g, data)
	if n := builds.Load(); n != 2 {
		t.Fatalf("builds = %d, want 2 (one after the discard)", n)
	}
}

// A checked file damaged on disk the ways a crash before the kernel
// flushed it can (cut short, zeroed, one flipped byte, trailer lost) is
// found by a new process (a new Cache over the same directory), discarded
// and built again; an intact one is served without a build.
func TestDerivedCheckedDamageFoundAfterRestart(t *testing.T) {
	data := randomBytes(20000, 5)
	cases := []struct {
		name    string
		damage  func(b []byte) []byte
		rebuild bool
	}{
		{"intact", func(b []byte) []byte { return b }, false},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, true},
		{"empty", func(b []byte) []byte { return nil }, true},
		{"zeroed block", func(b []byte) []byte { clear(b[100:4196]); return b }, true},
		{"flipped byte", func(b []byte) []byte { b[len(b)/3] ^= 1; return b }, true},
		{"flipped CRC", func(b []byte) []byte { b[len(b)-6] ^= 1; return b }, true},
		{"no trailer", func(b []byte) []byte { return b[:len(b)-int(checkTrailerLen)] }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var builds atomic.Int64
			c1 := newCache(t, Options{DiskDir: dir})
			f, err := c1.DerivedChecked(context.Background(), "k", writeBuild(data, &builds))
			if err != nil {
				t.Fatal(err)
			}
			path := f.Path()
			f.Close()
			c1.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			c2 := newCache(t, Options{DiskDir: dir})
			g, err := c2.DerivedChecked(context.Background(), "k", writeBuild(data, &builds))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			checkChecked(t, g, data)
			rebuilt := builds.Load() - 1
			if (rebuilt == 1) != tc.rebuild || rebuilt > 1 {
				t.Fatalf("%d rebuilds, want rebuild %v", rebuilt, tc.rebuild)
			}
			if d := c2.Stats().DiskDamaged; (d == 1) != tc.rebuild {
				t.Fatalf("DiskDamaged = %d, want rebuild %v", d, tc.rebuild)
			}
		})
	}
}

// A checked file changed in place while this process uses the cache (its
// ctime changes) is checked again at the next open, not trusted.
func TestDerivedCheckedChangedInPlace(t *testing.T) {
	data := randomBytes(8000, 9)
	var builds atomic.Int64
	c := newCache(t, Options{DiskDir: t.TempDir()})
	f, err := c.DerivedChecked(context.Background(), "k", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	path := f.Path()
	f.Close()
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("hostile"), 10); err != nil {
		t.Fatal(err)
	}
	w.Close()
	g, err := c.DerivedChecked(context.Background(), "k", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	checkChecked(t, g, data)
	if n := builds.Load(); n != 2 {
		t.Fatalf("builds = %d, want 2: the edited file was served", n)
	}
}

func TestCheckSumRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte(checkMagic), bytes.Repeat([]byte{0}, 100), append(bytes.Repeat([]byte{0xff}, 40), checkMagic...)} {
		if err := checkSum(bytes.NewReader(b), int64(len(b))); !errors.Is(err, ErrDamaged) {
			t.Errorf("checkSum(%d bytes) = %v, want ErrDamaged", len(b), err)
		}
	}
}

// A checked file this process built is trusted at its next opens: no
// CRC pass (the identity it recorded survives the rename into place).
func TestDerivedCheckedBuiltHereNotRechecked(t *testing.T) {
	data := randomBytes(8000, 4)
	var builds atomic.Int64
	c := newCache(t, Options{DiskDir: t.TempDir()})
	f, err := c.DerivedChecked(context.Background(), "k", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	d := c.disk
	d.mu.Lock()
	e := d.entries[fileName("k")]
	was := e.verified
	d.mu.Unlock()
	fi, err := os.Stat(d.path(e.name))
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := identityOf(fi); id != was {
		t.Fatalf("identity recorded at the build %+v, the file on disk has %+v: every next open would check the CRC again", was, id)
	}
}
