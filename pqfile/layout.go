package pqfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
)

// Segment is one piece of a Layout's output: Len bytes of the source or of the patch, from Off.
type Segment struct {
	// Len is the number of bytes in the piece; it is positive.
	Len int64
	// FromSource says the bytes are the source's; otherwise they are the patch's.
	FromSource bool
	// Off is where the bytes start in the source or in the patch.
	Off int64
}

// Layout describes the output of a Plan as a sequence of segments, each a byte range of the source
// file or of a patch: the bytes the output does not share with the source (re-encoded column
// chunks and the footer). Row groups kept whole are source ranges, so serving an output through
// a Layout copies nothing of them. A Layout is immutable and safe for concurrent use.
type Layout struct {
	segs      []Segment
	starts    []int64 // output offset of each segment
	size      int64
	patchSize int64
}

// NewLayout checks segs against a source of srcSize bytes and a patch of patchSize bytes (every
// segment non-empty and inside its file) and returns their layout. It fails with ErrCorrupt.
func NewLayout(segs []Segment, srcSize, patchSize int64) (*Layout, error) {
	l := &Layout{segs: make([]Segment, len(segs)), starts: make([]int64, len(segs)), patchSize: patchSize}
	copy(l.segs, segs)
	for i, s := range l.segs {
		limit := patchSize
		if s.FromSource {
			limit = srcSize
		}
		if s.Len <= 0 || s.Off < 0 || s.Off > limit || s.Len > limit-s.Off || l.size > 1<<62-s.Len {
			return nil, fmt.Errorf("%w: layout segment %d (%+v) is outside its file", ErrCorrupt, i, s)
		}
		l.starts[i] = l.size
		l.size += s.Len
	}
	return l, nil
}

// Size returns the output's size in bytes.
func (l *Layout) Size() int64 { return l.size }

// PatchSize returns the size of the patch the layout reads from.
func (l *Layout) PatchSize() int64 { return l.patchSize }

// Segments returns a copy of the layout's segments, in output order.
func (l *Layout) Segments() []Segment { return append([]Segment(nil), l.segs...) }

// ReadAt reads len(b) bytes of the output at off, from src (the source) and patch, as
// io.ReaderAt does: fewer bytes only with an error, io.EOF at the end of the output. A source or
// patch shorter than the layout says is ErrCorrupt.
func (l *Layout) ReadAt(b []byte, off int64, src, patch io.ReaderAt) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: read at offset %d", ErrInvalidArgument, off)
	}
	i := sort.Search(len(l.segs), func(k int) bool { return l.starts[k]+l.segs[k].Len > off })
	n := 0
	for ; n < len(b) && i < len(l.segs); i++ {
		s := l.segs[i]
		within := off + int64(n) - l.starts[i]
		k := int(min(int64(len(b)-n), s.Len-within))
		r := patch
		if s.FromSource {
			r = src
		}
		if err := readFull(r, b[n:n+k], s.Off+within); err != nil {
			return n, err
		}
		n += k
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// layoutVersion starts a marshalled layout.
const layoutVersion = 1

// MarshalBinary encodes the segments (not the files) compactly; UnmarshalLayout decodes them.
func (l *Layout) MarshalBinary() ([]byte, error) {
	b := []byte{layoutVersion}
	b = binary.AppendUvarint(b, uint64(len(l.segs)))
	for _, s := range l.segs {
		kind := uint64(0)
		if s.FromSource {
			kind = 1
		}
		b = binary.AppendUvarint(b, kind)
		b = binary.AppendUvarint(b, uint64(s.Off))
		b = binary.AppendUvarint(b, uint64(s.Len))
	}
	return b, nil
}

// UnmarshalLayout decodes segments encoded by MarshalBinary and checks them as NewLayout does.
// Malformed input is ErrCorrupt.
func UnmarshalLayout(b []byte, srcSize, patchSize int64) (*Layout, error) {
	if len(b) == 0 || b[0] != layoutVersion {
		return nil, fmt.Errorf("%w: unknown layout encoding", ErrCorrupt)
	}
	b = b[1:]
	next := func() (int64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > 1<<62 {
			return 0, false
		}
		b = b[k:]
		return int64(v), true
	}
	n, ok := next()
	if !ok || n > int64(len(b)) {
		return nil, fmt.Errorf("%w: bad layout segment count", ErrCorrupt)
	}
	segs := make([]Segment, n)
	for i := range segs {
		kind, ok1 := next()
		off, ok2 := next()
		ln, ok3 := next()
		if !ok1 || !ok2 || !ok3 || kind > 1 {
			return nil, fmt.Errorf("%w: bad layout segment %d", ErrCorrupt, i)
		}
		segs[i] = Segment{Len: ln, FromSource: kind == 1, Off: off}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after layout", ErrCorrupt, len(b))
	}
	return NewLayout(segs, srcSize, patchSize)
}

// WriteLayout re-encodes what the output does not share with the source, writes those bytes (the
// patch) to patch, and returns the layout of the output over the source and the patch. The output
// it describes is byte for byte what WriteTo writes. On error, patch may hold a partial patch.
func (p *Plan) WriteLayout(patch io.Writer) (*Layout, error) {
	s := &layoutSink{w: &countWriter{w: patch}}
	if err := p.emit(s); err != nil {
		return nil, err
	}
	if planned := p.plannedSize(); planned >= 0 && s.n != planned {
		return nil, fmt.Errorf("pqfile: laid out %d bytes, planned %d", s.n, planned)
	}
	return NewLayout(s.segs, p.size, s.w.n)
}

// layoutSink records the output as segments and writes produced bytes to the patch.
type layoutSink struct {
	w    *countWriter
	segs []Segment
	n    int64
}

func (s *layoutSink) pos() int64 { return s.n }

func (s *layoutSink) source(r byteRange) error {
	s.add(Segment{Len: r.n, FromSource: true, Off: r.off})
	return nil
}

func (s *layoutSink) bytes(b []byte) error {
	off := s.w.n
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	s.add(Segment{Len: int64(len(b)), Off: off})
	return nil
}

// add appends seg, merged into the last segment when it continues it in the same file.
func (s *layoutSink) add(seg Segment) {
	if seg.Len == 0 {
		return
	}
	s.n += seg.Len
	if k := len(s.segs) - 1; k >= 0 && s.segs[k].FromSource == seg.FromSource && s.segs[k].Off+s.segs[k].Len == seg.Off {
		s.segs[k].Len += seg.Len
		return
	}
	s.segs = append(s.segs, seg)
}
