package pqfile

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
)

// checkLayout asserts that p's layout over src and its patch reads back byte-identical to want
// (WriteTo's output): whole, at random offsets and lengths, across segment boundaries and past
// the end; and that its marshalled form decodes to the same segments.
func checkLayout(t *testing.T, src []byte, p *Plan, want []byte) *Layout {
	t.Helper()
	var patch bytes.Buffer
	l, err := p.WriteLayout(&patch)
	if err != nil {
		t.Fatalf("WriteLayout: %v", err)
	}
	if l.Size() != int64(len(want)) || l.PatchSize() != int64(patch.Len()) {
		t.Fatalf("layout size %d patch %d, want %d and %d", l.Size(), l.PatchSize(), len(want), patch.Len())
	}
	sr, pr := bytes.NewReader(src), bytes.NewReader(patch.Bytes())
	got := make([]byte, len(want))
	if n, err := l.ReadAt(got, 0, sr, pr); n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("whole layout read: %d bytes, %v; equal %v", n, err, bytes.Equal(got, want))
	}
	rng := rand.New(rand.NewPCG(uint64(len(want)), uint64(patch.Len())))
	offs := []int64{0, int64(len(want)) - 1}
	for _, s := range l.starts {
		offs = append(offs, s-1, s, s+1) // around every segment boundary
	}
	for range 200 {
		offs = append(offs, rng.Int64N(int64(len(want))+1))
	}
	for _, off := range offs {
		if off < 0 {
			continue
		}
		ln := rng.IntN(3 * (len(want)/len(l.segs) + 1))
		checkReadAt(t, l, sr, pr, want, off, ln)
	}
	b, _ := l.MarshalBinary()
	back, err := UnmarshalLayout(b, int64(len(src)), l.PatchSize())
	if err != nil || !equalSegments(back.Segments(), l.Segments()) {
		t.Fatalf("marshal round trip: %v", err)
	}
	return l
}

// checkReadAt reads ln bytes at off through l and compares with want, including the io.ReaderAt
// contract at the end of the output.
func checkReadAt(t *testing.T, l *Layout, src, patch io.ReaderAt, want []byte, off int64, ln int) {
	t.Helper()
	buf := make([]byte, ln)
	n, err := l.ReadAt(buf, off, src, patch)
	wantN := int(max(0, min(int64(ln), int64(len(want))-off)))
	if n != wantN || !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
		t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d equal bytes", ln, off, n, err, wantN)
	}
	if (n < ln) != (err == io.EOF) || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt(%d bytes at %d) = %d, err %v", ln, off, n, err)
	}
}

func equalSegments(a, b []Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLayoutSharesUnchangedGroups checks that a file with deletes in one row group of eight has a
// patch of about that group plus the footer, the rest being read from the source.
func TestLayoutSharesUnchangedGroups(t *testing.T) {
	src := genFile(t, genRows(2400), 300, &parquet.Snappy)
	firsts, _ := rowGroupBounds(t, src)
	cases := []struct {
		name     string
		del      *roaring64.Bitmap
		maxPatch float64 // of the source's size
		minSrc   float64
	}{
		{"footer only", roaring64.New(), 0.2, 0.8},
		{"1 of 8", roaring64.BitmapOf(uint64(firsts[3]+1), uint64(firsts[3]+7)), 0.3, 0.7},
		{"drop 1 of 8", rangeBitmap(firsts[3], firsts[4]), 0.2, 0.7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, p := rewrite(t, src, c.del, nil)
			l := checkLayout(t, src, p, out)
			var fromSrc int64
			for _, s := range l.Segments() {
				if s.FromSource {
					fromSrc += s.Len
				}
			}
			size := float64(len(src))
			if float64(l.PatchSize()) > c.maxPatch*size || float64(fromSrc) < c.minSrc*size {
				t.Errorf("patch %d, from source %d of a %d-byte source", l.PatchSize(), fromSrc, len(src))
			}
		})
	}
}

func TestLayoutRejectsBadSegments(t *testing.T) {
	cases := []struct {
		name string
		segs []Segment
	}{
		{"empty segment", []Segment{{Len: 0, FromSource: true}}},
		{"negative offset", []Segment{{Len: 1, Off: -1}}},
		{"beyond source", []Segment{{Len: 5, FromSource: true, Off: 96}}},
		{"beyond patch", []Segment{{Len: 11, Off: 0}}},
		{"overflow", []Segment{{Len: 1 << 62, FromSource: true, Off: 1 << 62}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewLayout(c.segs, 100, 10); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("NewLayout err = %v, want ErrCorrupt", err)
			}
			l := &Layout{segs: c.segs}
			b, _ := l.MarshalBinary()
			if _, err := UnmarshalLayout(b, 100, 10); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("UnmarshalLayout err = %v, want ErrCorrupt", err)
			}
		})
	}
	good, _ := (&Layout{segs: []Segment{{Len: 4, FromSource: true}, {Len: 10}}}).MarshalBinary()
	for cut := range len(good) {
		if _, err := UnmarshalLayout(good[:cut], 100, 10); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err = %v, want ErrCorrupt", cut, err)
		}
	}
	if _, err := UnmarshalLayout(append(good, 0), 100, 10); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: err = %v, want ErrCorrupt", err)
	}
	if _, err := UnmarshalLayout(good, 100, 10); err != nil {
		t.Fatalf("good layout: %v", err)
	}
}

// TestLayoutShortSource checks that a source shorter than the layout is an error, not short data.
func TestLayoutShortSource(t *testing.T) {
	src := genFile(t, genRows(800), 100, &parquet.Snappy)
	p, err := NewPlan(bytes.NewReader(src), int64(len(src)), roaring64.BitmapOf(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	var patch bytes.Buffer
	l, err := p.WriteLayout(&patch)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, l.Size())
	_, err = l.ReadAt(buf, 0, bytes.NewReader(src[:len(src)/2]), bytes.NewReader(patch.Bytes()))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if _, err := l.ReadAt(buf, -1, bytes.NewReader(src), bytes.NewReader(patch.Bytes())); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative offset: err = %v", err)
	}
}
