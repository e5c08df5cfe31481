package delta

// Deletion vectors [PROTOCOL.md "Deletion Vector Format"]: the
// descriptor's location (DVRelativeKey), inline vectors, the RoaringBitmap
// serializations, DV files and their records, and loading one through a
// Storage (LoadDeletionVector).

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net/url"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Magic numbers of the serialized deletion vector bitmap (PROTOCOL.md "Deletion Vector Format"),
// stored little-endian in its first 4 bytes.
const (
	dvMagicPortable uint32 = 1681511377 // u64 count, then (u32 key, roaring32) per bucket
	dvMagicNative   uint32 = 1681511376 // u32 count, then (u32 size, roaring32) per bucket, keys 0..n-1
)

// dvFileVersion is the first byte of a deletion vector file (PROTOCOL.md "Deletion Vector File Storage Format").
const dvFileVersion = 1

// dvCorruptf builds an error wrapping ErrCorruptDeletionVector.
func dvCorruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptDeletionVector, fmt.Sprintf(format, args...))
}

// DeletionVectorRecord locates one deletion vector written by EncodeDVFile:
// Offset is the position of its size field in the file (the descriptor's
// offset, so the first record is at 1), SizeInBytes the length of its
// serialized bitmap and Cardinality the number of deleted rows.
type DeletionVectorRecord struct {
	Offset      int32
	SizeInBytes int32
	Cardinality int64
}

// DecodeDVBitmap decodes a serialized deletion vector bitmap: the portable
// magic followed by the 64-bit Roaring portable serialization, or the native
// magic followed by dense 32-bit buckets. Bytes after the bitmap are
// ignored, as by the reference readers. It never panics: anything that is
// not a valid bitmap of row indexes (< 2^63) is an error wrapping
// ErrCorruptDeletionVector. The result holds no reference to data.
func DecodeDVBitmap(data []byte) (bm *roaring64.Bitmap, err error) {
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, dvCorruptf("bitmap decoder failed: %v", r)
		}
	}()
	if len(data) < 4 {
		return nil, dvCorruptf("bitmap of %d bytes is too short", len(data))
	}
	magic, rest := binary.LittleEndian.Uint32(data), data[4:]
	var buckets []dvBucket
	switch magic {
	case dvMagicPortable:
		buckets, err = splitPortable(rest)
	case dvMagicNative:
		buckets, err = splitNative(rest)
	default:
		return nil, dvCorruptf("unknown bitmap magic %d", magic)
	}
	if err != nil {
		return nil, err
	}
	return assembleBuckets(buckets)
}

// dvBucket is one 32-bit Roaring bitmap holding the row indexes whose high
// 32 bits are key.
type dvBucket struct {
	key  uint32
	data []byte          // its standard 32-bit Roaring serialization
	bm   *roaring.Bitmap // decoded from data without a copy, for checks only
}

// minRoaring32Size is the smallest 32-bit Roaring serialization (cookie
// 12346 and a zero container count); it bounds bucket counts before any
// allocation.
const minRoaring32Size = 8

// splitPortable splits "u64 count, then (u32 key, roaring32) per bucket".
func splitPortable(b []byte) ([]dvBucket, error) {
	if len(b) < 8 {
		return nil, dvCorruptf("portable bitmap: missing bucket count")
	}
	n, b := binary.LittleEndian.Uint64(b), b[8:]
	if n > uint64(len(b)/(4+minRoaring32Size)) {
		return nil, dvCorruptf("portable bitmap: %d buckets cannot fit in %d bytes", n, len(b))
	}
	buckets := make([]dvBucket, 0, n)
	for i := uint64(0); i < n; i++ {
		if len(b) < 4 {
			return nil, dvCorruptf("portable bitmap: bucket %d: missing key", i)
		}
		key := binary.LittleEndian.Uint32(b)
		if i > 0 && key <= buckets[i-1].key {
			return nil, dvCorruptf("portable bitmap: bucket keys not ascending (%d after %d)", key, buckets[i-1].key)
		}
		bm, size, err := readRoaring32(b[4:])
		if err != nil {
			return nil, dvCorruptf("portable bitmap: bucket %d: %v", i, err)
		}
		buckets = append(buckets, dvBucket{key: key, data: b[4 : 4+size], bm: bm})
		b = b[4+size:]
	}
	// Trailing bytes are tolerated, as the reference readers do; the
	// record's CRC already guards the file.
	return buckets, nil
}

// splitNative splits "u32 count, then (u32 size, roaring32) per bucket";
// bucket i holds key i.
func splitNative(b []byte) ([]dvBucket, error) {
	if len(b) < 4 {
		return nil, dvCorruptf("native bitmap: missing bucket count")
	}
	n, b := binary.LittleEndian.Uint32(b), b[4:]
	if uint64(n) > uint64(len(b)/(4+minRoaring32Size)) {
		return nil, dvCorruptf("native bitmap: %d buckets cannot fit in %d bytes", n, len(b))
	}
	buckets := make([]dvBucket, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(b) < 4 {
			return nil, dvCorruptf("native bitmap: bucket %d: missing size", i)
		}
		size := binary.LittleEndian.Uint32(b)
		if uint64(size) > uint64(len(b)-4) {
			return nil, dvCorruptf("native bitmap: bucket %d: size %d exceeds the %d bytes left", i, size, len(b)-4)
		}
		data := b[4 : 4+size]
		bm, _, err := readRoaring32(data)
		if err != nil {
			return nil, dvCorruptf("native bitmap: bucket %d: %v", i, err)
		}
		buckets = append(buckets, dvBucket{key: i, data: data, bm: bm})
		b = b[4+size:]
	}
	return buckets, nil
}

// readRoaring32 decodes and validates the 32-bit Roaring bitmap at the start
// of b and returns it with the number of bytes it occupies. The bitmap
// shares b's memory (FromBuffer, no copy): use it only while b is alive and
// unchanged, to inspect it.
func readRoaring32(b []byte) (*roaring.Bitmap, int, error) {
	bm := roaring.New()
	n, err := bm.FromBuffer(b)
	if err != nil {
		return nil, 0, err
	}
	if n <= 0 || n > int64(len(b)) {
		return nil, 0, fmt.Errorf("roaring decoder consumed %d of %d bytes", n, len(b))
	}
	if err := bm.Validate(); err != nil {
		return nil, 0, err
	}
	return bm, int(n), nil
}

// assembleBuckets builds the 64-bit bitmap from validated buckets. Empty
// buckets (writers keep them so native keys stay dense) are dropped, since
// roaring64 expects none; the rest are re-read through roaring64's portable
// decoder, which is the only exported way to place a 32-bit bitmap at a
// key other than 0.
func assembleBuckets(buckets []dvBucket) (*roaring64.Bitmap, error) {
	var buf bytes.Buffer
	var n uint64
	for _, bk := range buckets {
		if bk.key >= 1<<31 {
			return nil, dvCorruptf("bucket key %d: row indexes must be below 2^63", bk.key)
		}
		if !bk.bm.IsEmpty() {
			n++
		}
	}
	buf.Write(binary.LittleEndian.AppendUint64(nil, n))
	for _, bk := range buckets {
		if bk.bm.IsEmpty() {
			continue
		}
		buf.Write(binary.LittleEndian.AppendUint32(nil, bk.key))
		buf.Write(bk.data)
	}
	bm := roaring64.New()
	if err := bm.UnmarshalBinary(buf.Bytes()); err != nil {
		return nil, dvCorruptf("bitmap: %v", err)
	}
	return bm, nil
}

// EncodeDVBitmap serializes bm in the portable format Delta writers use:
// the little-endian portable magic and roaring64's portable serialization.
// Row indexes must be below 2^63.
func EncodeDVBitmap(bm *roaring64.Bitmap) ([]byte, error) {
	if !bm.IsEmpty() && bm.Maximum() > math.MaxInt64 {
		return nil, fmt.Errorf("encode deletion vector: row index %d exceeds 2^63-1", bm.Maximum())
	}
	var buf bytes.Buffer
	buf.Write(binary.LittleEndian.AppendUint32(nil, dvMagicPortable))
	if _, err := bm.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode deletion vector: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeDVRecord decodes one record of a deletion vector file: rec is the
// sizeInBytes+8 bytes at the descriptor's offset (big-endian u32 size equal
// to sizeInBytes, the serialized bitmap, big-endian CRC-32 IEEE of the
// bitmap). Any mismatch wraps ErrCorruptDeletionVector and says what was
// expected and what was found.
func DecodeDVRecord(rec []byte, sizeInBytes int32) (*roaring64.Bitmap, error) {
	if sizeInBytes < 0 {
		return nil, dvCorruptf("negative sizeInBytes %d", sizeInBytes)
	}
	want := int64(sizeInBytes) + 8
	if int64(len(rec)) != want {
		return nil, dvCorruptf("record truncated: expected %d bytes, got %d", want, len(rec))
	}
	if got := binary.BigEndian.Uint32(rec); got != uint32(sizeInBytes) {
		return nil, dvCorruptf("size field: expected %d, got %d", sizeInBytes, got)
	}
	payload := rec[4 : 4+sizeInBytes]
	wantCRC := binary.BigEndian.Uint32(rec[4+sizeInBytes:])
	if got := crc32.ChecksumIEEE(payload); got != wantCRC {
		return nil, dvCorruptf("CRC-32: expected %08x, got %08x", wantCRC, got)
	}
	return DecodeDVBitmap(payload)
}

// EncodeDVFile writes a deletion vector file holding bitmaps in order:
// the version byte 1, then one record per bitmap. descs[i] gives the offset
// and size a descriptor needs to point at bitmaps[i].
func EncodeDVFile(bitmaps []*roaring64.Bitmap) (file []byte, descs []DeletionVectorRecord, err error) {
	file = []byte{dvFileVersion}
	descs = make([]DeletionVectorRecord, 0, len(bitmaps))
	for i, bm := range bitmaps {
		payload, err := EncodeDVBitmap(bm)
		if err != nil {
			return nil, nil, fmt.Errorf("deletion vector %d: %w", i, err)
		}
		if int64(len(file))+int64(len(payload))+8 > math.MaxInt32 {
			return nil, nil, fmt.Errorf("deletion vector %d: file would exceed 2 GiB", i)
		}
		descs = append(descs, DeletionVectorRecord{
			Offset:      int32(len(file)),
			SizeInBytes: int32(len(payload)),
			Cardinality: int64(bm.GetCardinality()),
		})
		file = binary.BigEndian.AppendUint32(file, uint32(len(payload)))
		file = append(file, payload...)
		file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(payload))
	}
	return file, descs, nil
}

// DVRelativeKey returns where a stored deletion vector lives. For storage type
// `u` it is the key relative to the table root:
// "<prefix>/deletion_vector_<uuid>.bin", or "deletion_vector_<uuid>.bin"
// without a prefix. For `p` it is the absolute URI decoded once with path
// semantics (for messages; LoadDeletionVector resolves it with ResolvePath).
// Inline (`i`) and unknown storage types are errors wrapping
// ErrCorruptDeletionVector.
func DVRelativeKey(d *DeletionVector) (key string, err error) {
	switch d.StorageType {
	case "u":
		p := d.PathOrInlineDV
		if len(p) < 20 {
			return "", dvCorruptf("`u` path %q is shorter than a 20-character UUID", p)
		}
		prefix, enc := p[:len(p)-20], p[len(p)-20:]
		id, err := DVUUIDFromZ85(enc)
		if err != nil {
			return "", err
		}
		name := "deletion_vector_" + id.String() + ".bin"
		if prefix == "" {
			return name, nil
		}
		if strings.HasPrefix(prefix, "/") || strings.Contains("/"+prefix+"/", "/../") {
			return "", dvCorruptf("`u` prefix %q leaves the table root", prefix)
		}
		return prefix + "/" + name, nil
	case "p":
		s, err := url.PathUnescape(d.PathOrInlineDV)
		if err != nil {
			return "", dvCorruptf("`p` path %q: %v", d.PathOrInlineDV, err)
		}
		return s, nil
	case "i":
		return "", dvCorruptf("inline deletion vector has no file")
	default:
		return "", dvCorruptf("unknown storage type %q", d.StorageType)
	}
}

// InlineDVBitmap decodes an inline (`i`) deletion vector: pathOrInlineDv is
// the Z85 encoding of the serialized bitmap padded to a multiple of 4 bytes,
// of which the first sizeInBytes count. Errors wrap ErrCorruptDeletionVector.
func InlineDVBitmap(d *DeletionVector) (*roaring64.Bitmap, error) {
	if d.StorageType != "i" {
		return nil, dvCorruptf("storage type %q is not inline", d.StorageType)
	}
	raw, err := Z85Decode(d.PathOrInlineDV)
	if err != nil {
		return nil, dvCorruptf("inline: %v", err)
	}
	if d.SizeInBytes < 0 || int(d.SizeInBytes) > len(raw) {
		return nil, dvCorruptf("inline: sizeInBytes %d, but the Z85 text holds %d bytes", d.SizeInBytes, len(raw))
	}
	return DecodeDVBitmap(raw[:d.SizeInBytes])
}

// LoadDeletionVector returns the deleted row indexes described by d. A nil
// descriptor or a cardinality of 0 gives an empty bitmap without I/O; inline
// (`i`) vectors are decoded from the descriptor; `u` and `p` read one record
// of a DV file through s. tableRoot is the table location s is rooted at
// (as given by the user, or s.String()); it is used to turn a `p` URI into a
// key with ResolvePath.
//
// The record is sizeInBytes+8 bytes at offset, which points at the size
// field. An absent offset means the first record (offset 1, right after the
// version byte), as delta-kernel-rs reads it; the version byte is then
// checked too. The decoded bitmap must hold exactly d.Cardinality rows.
// Corruption wraps ErrCorruptDeletionVector; errors name the DV file.
func LoadDeletionVector(ctx context.Context, s Storage, tableRoot string, d *DeletionVector) (*roaring64.Bitmap, error) {
	if d == nil || d.Cardinality == 0 {
		return roaring64.New(), nil
	}
	var bm *roaring64.Bitmap
	var err error
	where := "inline deletion vector"
	if d.StorageType == "i" {
		bm, err = InlineDVBitmap(d)
	} else {
		var key string
		key, err = storedDVKey(tableRoot, d)
		if err != nil {
			return nil, fmt.Errorf("deletion vector %s%s: %w", d.StorageType, d.PathOrInlineDV, err)
		}
		where = "deletion vector file " + key
		bm, err = readStoredDV(ctx, s, key, d)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if got := bm.GetCardinality(); got != uint64(d.Cardinality) {
		return nil, fmt.Errorf("%s: %w", where,
			dvCorruptf("cardinality: descriptor says %d, bitmap holds %d", d.Cardinality, got))
	}
	return bm, nil
}

// storedDVKey is the Storage key of a `u` or `p` deletion vector file.
func storedDVKey(tableRoot string, d *DeletionVector) (string, error) {
	if d.StorageType == "p" {
		return ResolvePath(tableRoot, d.PathOrInlineDV)
	}
	return DVRelativeKey(d)
}

// readStoredDV reads and decodes d's record of the DV file at key.
func readStoredDV(ctx context.Context, s Storage, key string, d *DeletionVector) (*roaring64.Bitmap, error) {
	if d.SizeInBytes < 0 {
		return nil, dvCorruptf("negative sizeInBytes %d", d.SizeInBytes)
	}
	off, n := int64(0), int64(d.SizeInBytes)+9 // version byte + record
	if d.Offset != nil {
		if *d.Offset < 1 {
			return nil, dvCorruptf("offset %d is before the first record", *d.Offset)
		}
		off, n = int64(*d.Offset), n-1
	}
	rc, err := s.ReadRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// LimitReader + ReadAll: a lying sizeInBytes costs what the file holds,
	// not what the descriptor claims.
	rec, err := io.ReadAll(io.LimitReader(rc, n))
	if err != nil {
		return nil, fmt.Errorf("read at offset %d: %w", off, err)
	}
	if d.Offset == nil {
		if len(rec) == 0 || rec[0] != dvFileVersion {
			return nil, dvCorruptf("file does not start with format version %d", dvFileVersion)
		}
		rec, off = rec[1:], 1
	}
	bm, err := DecodeDVRecord(rec, d.SizeInBytes)
	if err != nil {
		return nil, fmt.Errorf("record at offset %d: %w", off, err)
	}
	return bm, nil
}
