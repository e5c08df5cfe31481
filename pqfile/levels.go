package pqfile

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/parquet-go/parquet-go/encoding/rle"
)

// errHybrid reports RLE/bit-packed hybrid data that ends before the values it must hold, or a
// bit width out of range. Callers wrap it in ErrCorrupt with the page's position.
var errHybrid = errors.New("bad RLE/bit-packed data")

// levelWidth returns the bit width of definition levels up to maxDef.
func levelWidth(maxDef int) uint { return uint(bits.Len(uint(maxDef))) }

// decodeHybrid appends to dst exactly n values of the RLE/bit-packed hybrid encoding in src, of
// the given bit width (at most 8 for uint8, 32 for int32). Values after the n-th (the padding of a
// last bit-packed run, further runs) are ignored. Unlike parquet-go's decoder it never allocates
// more than n values whatever the run headers claim, and it reads only inside src.
func decodeHybrid[T uint8 | int32](dst []T, src []byte, width uint, n int) ([]T, error) {
	if width > uint(8*binaryWidth[T]()) {
		return dst, errHybrid
	}
	want := len(dst) + n
	byteWidth := int(width+7) / 8
	for len(dst) < want {
		h, k := binary.Uvarint(src)
		if k <= 0 {
			return dst, errHybrid
		}
		src = src[k:]
		count := h >> 1
		if count > 1<<40 {
			return dst, errHybrid
		}
		if h&1 == 0 {
			if len(src) < byteWidth {
				return dst, errHybrid
			}
			var v uint32
			for i := range byteWidth {
				v |= uint32(src[i]) << (8 * i)
			}
			src = src[byteWidth:]
			for m := min(count, uint64(want-len(dst))); m > 0; m-- {
				dst = append(dst, T(v))
			}
			continue
		}
		m := int(min(count*8, uint64(want-len(dst))))
		need := (m*int(width) + 7) / 8
		if len(src) < need {
			return dst, errHybrid
		}
		dst = unpackBits(dst, src[:need], width, m)
		src = src[min(uint64(len(src)), count*uint64(width)):]
	}
	return dst, nil
}

// binaryWidth returns the size in bytes of T.
func binaryWidth[T uint8 | int32]() int {
	var v T
	switch any(v).(type) {
	case uint8:
		return 1
	}
	return 4
}

// unpackBits appends m values of width bits packed LSB first in src (which holds enough bytes).
func unpackBits[T uint8 | int32](dst []T, src []byte, width uint, m int) []T {
	if width == 0 {
		for range m {
			dst = append(dst, 0)
		}
		return dst
	}
	mask := uint64(1)<<width - 1
	var acc uint64
	var have uint
	p := 0
	for range m {
		for have < width {
			acc |= uint64(src[p]) << have
			p++
			have += 8
		}
		dst = append(dst, T(acc&mask))
		acc >>= width
		have -= width
	}
	return dst
}

// appendLevels appends the hybrid encoding of levels (each below 1<<width) to dst, using scratch
// as working space; it returns dst and scratch for reuse.
func appendLevels(dst, scratch []byte, levels []uint8, width uint) ([]byte, []byte, error) {
	enc := rle.Encoding{BitWidth: int(width)}
	scratch, err := enc.EncodeLevels(scratch, levels)
	return append(dst, scratch...), scratch, err
}

// appendIndexes appends the hybrid encoding of dictionary indexes (each below 1<<width) to dst,
// using scratch as working space; it returns dst and scratch for reuse.
func appendIndexes(dst, scratch []byte, idx []int32, width uint) ([]byte, []byte, error) {
	enc := rle.Encoding{BitWidth: int(width)}
	scratch, err := enc.EncodeInt32(scratch, idx)
	return append(dst, scratch...), scratch, err
}
