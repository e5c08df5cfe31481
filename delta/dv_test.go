package delta_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// goldenDVTable is the table holding the 43-byte DV file of PROTOCOL.md "Deletion Vector File Storage Format".
const goldenDVTable = "delta-kernel-rs/golden-dv-partitioned-with-checkpoint"

func i32(v int32) *int32 { return &v }

func TestDVRelativeKey(t *testing.T) {
	tests := []struct {
		dv   delta.DeletionVector
		want string
	}{
		{delta.DeletionVector{StorageType: "u", PathOrInlineDV: "ab^-aqEH.-t@S}K{vb[*k^"},
			"ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"},
		{delta.DeletionVector{StorageType: "u", PathOrInlineDV: "0X9F0q2<2yJ-f)Gm2!e0"},
			"deletion_vector_0229ec3d-5100-44e1-8e53-702d448da8da.bin"},
		{delta.DeletionVector{StorageType: "p", PathOrInlineDV: "s3://b/t/a%25b%20c.bin"},
			"s3://b/t/a%b c.bin"},
	}
	for _, tt := range tests {
		got, err := delta.DVRelativeKey(&tt.dv)
		if err != nil || got != tt.want {
			t.Errorf("RelativeKey(%+v) = %q, %v; want %q", tt.dv, got, err, tt.want)
		}
	}
	for _, bad := range []delta.DeletionVector{
		{StorageType: "u", PathOrInlineDV: "short"},
		{StorageType: "u", PathOrInlineDV: "ab^-aqEH.-t@S}K{vb[ k^"},
		{StorageType: "u", PathOrInlineDV: "../^-aqEH.-t@S}K{vb[*k^"},
		{StorageType: "i", PathOrInlineDV: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"},
		{StorageType: "x", PathOrInlineDV: "0X9F0q2<2yJ-f)Gm2!e0"},
	} {
		if got, err := delta.DVRelativeKey(&bad); !errors.Is(err, delta.ErrCorruptDeletionVector) {
			t.Errorf("RelativeKey(%+v) = %q, %v; want ErrCorruptDeletionVector", bad, got, err)
		}
	}
}

func TestDVInlineBitmap(t *testing.T) {
	tests := []struct {
		z85  string
		size int32
		want []uint64
	}{
		// delta-kernel-rs unit test vector (Spark-style zero padding, aligned).
		{"^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 44, []uint64{3, 4, 7, 11, 18, 29}},
		// Fixture delta-kernel-rs/cdf-table-with-dv, commits 3 to 6.
		{"^Bg9^0rr910000000000iXQKl0rr91000935c8Xg000311onP9", 40, []uint64{0, 1, 4, 5}},
		{"^Bg9^0rr910000000000iXQKl0rr91000315c8Xg000f5", 36, []uint64{0, 5}},
		{"^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", 34, []uint64{3}}, // z85-crate padded tail
	}
	for _, tt := range tests {
		d := &delta.DeletionVector{StorageType: "i", PathOrInlineDV: tt.z85, SizeInBytes: tt.size, Cardinality: int64(len(tt.want))}
		bm, err := delta.InlineDVBitmap(d)
		if err != nil || !slices.Equal(bm.ToArray(), tt.want) {
			t.Errorf("InlineBitmap(%q) = %v, %v; want %v", tt.z85, bm, err, tt.want)
		}
		// LoadDeletionVector needs no storage for inline vectors.
		bm, err = delta.LoadDeletionVector(context.Background(), nil, "", d)
		if err != nil || !slices.Equal(bm.ToArray(), tt.want) {
			t.Errorf("LoadDeletionVector(%q) = %v, %v; want %v", tt.z85, bm, err, tt.want)
		}
	}
	// A writer's inline encoding (zero padding) round-trips.
	want := roaring64.BitmapOf(2, 1<<32)
	enc, err := delta.EncodeDVBitmap(want)
	if err != nil {
		t.Fatal(err)
	}
	d := &delta.DeletionVector{StorageType: "i", PathOrInlineDV: delta.Z85Encode(enc), SizeInBytes: int32(len(enc)), Cardinality: 2}
	if bm, err := delta.InlineDVBitmap(d); err != nil || !bm.Equals(want) {
		t.Errorf("inline round trip = %v, %v; want %v", bm, err, want.ToArray())
	}
}

// readGoldenDVFile returns the 43-byte DV file of the golden table.
func readGoldenDVFile(t *testing.T) (tableDir string, data []byte) {
	t.Helper()
	tableDir = testenv.Fixture(t, goldenDVTable)
	data, err := os.ReadFile(filepath.Join(tableDir, "deletion_vector_0229ec3d-5100-44e1-8e53-702d448da8da.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 43 || data[0] != 1 {
		t.Fatalf("golden DV file: %d bytes, version %d; want 43 bytes, version 1", len(data), data[0])
	}
	return tableDir, data
}

func TestDVGoldenFile(t *testing.T) {
	tableDir, data := readGoldenDVFile(t)
	bm, err := delta.DecodeDVRecord(data[1:], 34)
	if err != nil {
		t.Fatal(err)
	}
	if got := bm.ToArray(); !slices.Equal(got, []uint64{0}) {
		t.Fatalf("golden DV = %v, want [0]", got)
	}
	// The writer reproduces the payload byte for byte.
	enc, err := delta.EncodeDVBitmap(bm)
	if err != nil || !bytes.Equal(enc, data[5:39]) {
		t.Fatalf("EncodeDVBitmap = %x, %v; want %x", enc, err, data[5:39])
	}
	ctx := context.Background()
	store, err := blobstore.Open(ctx, tableDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, off := range []*int32{i32(1), nil} { // absent offset = first record
		d := &delta.DeletionVector{StorageType: "u", PathOrInlineDV: "0X9F0q2<2yJ-f)Gm2!e0",
			Offset: off, SizeInBytes: 34, Cardinality: 1}
		bm, err := delta.LoadDeletionVector(ctx, store, store.String(), d)
		if err != nil || !slices.Equal(bm.ToArray(), []uint64{0}) {
			t.Errorf("LoadDeletionVector(offset %v) = %v, %v; want [0]", off, bm, err)
		}
	}
}

func TestDVRecordCorruption(t *testing.T) {
	_, file := readGoldenDVFile(t)
	rec := file[1:]
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(rec)) }
	tests := []struct {
		name string
		rec  []byte
		size int32
		msg  string
	}{
		{"flipped CRC byte", mutate(func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }), 34, "CRC"},
		{"flipped payload byte", mutate(func(b []byte) []byte { b[20] ^= 0x80; return b }), 34, "CRC"},
		{"wrong size field", mutate(func(b []byte) []byte { b[3] = 35; return b }), 34, "expected 34, got 35"},
		{"descriptor size disagrees", rec, 33, "expected 41 bytes"},
		{"truncated record", rec[:len(rec)-3], 34, "expected 42 bytes, got 39"},
		{"empty record", nil, 34, "truncated"},
		{"negative size", rec, -1, "negative"},
		{"garbage", bytes.Repeat([]byte{0xA5}, 42), 34, "size field"},
		{"bad magic, valid CRC", dvRecord([]byte("not a roaring bitmap at all")), 27, "magic"},
		{"truncated bitmap, valid CRC", dvRecord(rec[4:30]), 26, "bitmap"},
	}
	for _, tt := range tests {
		bm, err := delta.DecodeDVRecord(tt.rec, tt.size)
		if !errors.Is(err, delta.ErrCorruptDeletionVector) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: DecodeDVRecord = %v, %v; want ErrCorruptDeletionVector mentioning %q", tt.name, bm, err, tt.msg)
		}
	}
}

// dvRecord frames payload as a DV file record with a correct CRC.
func dvRecord(payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(payload))
}

// roaring32Bytes serializes a 32-bit Roaring bitmap of vals.
func roaring32Bytes(t *testing.T, vals ...uint32) []byte {
	t.Helper()
	b, err := roaring.BitmapOf(vals...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeDVBitmapNative(t *testing.T) {
	le32 := func(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
	b := le32(nil, 1681511376)
	b = le32(b, 3) // three dense buckets: keys 0, 1, 2
	for _, vals := range [][]uint32{{1, 5, 70000}, {}, {7}} {
		r := roaring32Bytes(t, vals...)
		b = append(le32(b, uint32(len(r))), r...)
	}
	bm, err := delta.DecodeDVBitmap(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{1, 5, 70000, 2<<32 | 7}
	if got := bm.ToArray(); !slices.Equal(got, want) {
		t.Fatalf("native bitmap = %v, want %v", got, want)
	}
	// A bucket size that runs past the end, and a count the bytes cannot hold.
	bad := slices.Clone(b)
	binary.LittleEndian.PutUint32(bad[8:], 1<<20)
	if _, err := delta.DecodeDVBitmap(bad); !errors.Is(err, delta.ErrCorruptDeletionVector) {
		t.Errorf("oversized bucket: err = %v", err)
	}
	binary.LittleEndian.PutUint32(bad[4:], 1<<31)
	if _, err := delta.DecodeDVBitmap(bad); !errors.Is(err, delta.ErrCorruptDeletionVector) {
		t.Errorf("huge bucket count: err = %v", err)
	}
}

// portableBitmap builds a portable serialization from (key, values) buckets.
func portableBitmap(t *testing.T, keys []uint32, vals [][]uint32) []byte {
	t.Helper()
	b := binary.LittleEndian.AppendUint32(nil, 1681511377)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(keys)))
	for i, k := range keys {
		b = binary.LittleEndian.AppendUint32(b, k)
		b = append(b, roaring32Bytes(t, vals[i]...)...)
	}
	return b
}

func TestDecodeDVBitmapPortable(t *testing.T) {
	// Dense writers keep empty buckets; they must be accepted and dropped.
	bm, err := delta.DecodeDVBitmap(portableBitmap(t, []uint32{0, 1, 3}, [][]uint32{{}, {9}, {0, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{1<<32 | 9, 3 << 32, 3<<32 | 1}
	if got := bm.ToArray(); !slices.Equal(got, want) || bm.GetCardinality() != 3 {
		t.Fatalf("portable bitmap = %v, want %v", got, want)
	}
	bad := map[string][]byte{
		"keys not ascending": portableBitmap(t, []uint32{1, 1}, [][]uint32{{1}, {2}}),
		"keys descending":    portableBitmap(t, []uint32{2, 1}, [][]uint32{{1}, {2}}),
		"row index >= 2^63":  portableBitmap(t, []uint32{1 << 31}, [][]uint32{{1}}),
		"huge bucket count":  binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 1681511377), 1<<40),
		"no bucket count":    binary.LittleEndian.AppendUint32(nil, 1681511377),
		"short":              {0xD1, 0xD3},
		"unknown magic":      binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 1681511378), 0),
		"big-endian magic":   {0x64, 0x39, 0xD3, 0xD1, 0, 0, 0, 0, 0, 0, 0, 0},
	}
	for name, b := range bad {
		if bm, err := delta.DecodeDVBitmap(b); !errors.Is(err, delta.ErrCorruptDeletionVector) {
			t.Errorf("%s: DecodeDVBitmap = %v, %v; want ErrCorruptDeletionVector", name, bm, err)
		}
	}
}

// TestDecodeDVBitmapNoPanic feeds mutated valid bitmaps and random bytes to
// the decoder: each must decode or fail with ErrCorruptDeletionVector.
func TestDecodeDVBitmapNoPanic(t *testing.T) {
	src := roaring64.New()
	src.AddRange(100, 20000) // a run container
	src.AddMany([]uint64{3, 70000, 70002, 5 << 32, 5<<32 | 9})
	for i := uint64(0); i < 5000; i++ {
		src.Add(1<<20 + 3*i) // a bitmap container
	}
	src.RunOptimize()
	valid, err := delta.EncodeDVBitmap(src)
	if err != nil {
		t.Fatal(err)
	}
	check := func(b []byte) {
		t.Helper()
		if _, err := delta.DecodeDVBitmap(b); err != nil && !errors.Is(err, delta.ErrCorruptDeletionVector) {
			t.Fatalf("DecodeDVBitmap(%x...): %v does not wrap ErrCorruptDeletionVector", b[:min(len(b), 16)], err)
		}
	}
	for i := range valid {
		for _, x := range []byte{0x01, 0x80, 0xFF} {
			b := slices.Clone(valid)
			b[i] ^= x
			check(b)
		}
		check(valid[:i])
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 2000; n++ {
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		for _, magic := range []uint32{1681511377, 1681511376} {
			check(append(binary.LittleEndian.AppendUint32(nil, magic), b...))
		}
	}
}

func FuzzDecodeDVBitmap(f *testing.F) {
	f.Add(portableBitmapSeed(f))
	f.Add([]byte{0xD0, 0xD3, 0x39, 0x64, 1, 0, 0, 0, 8, 0, 0, 0, 0x3a, 0x30, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		bm, err := delta.DecodeDVBitmap(b)
		if err != nil {
			if !errors.Is(err, delta.ErrCorruptDeletionVector) {
				t.Fatalf("error %v does not wrap ErrCorruptDeletionVector", err)
			}
			return
		}
		if _, err := delta.EncodeDVBitmap(bm); err != nil {
			t.Fatalf("decoded bitmap does not re-encode: %v", err)
		}
	})
}

func portableBitmapSeed(f *testing.F) []byte {
	b, err := delta.EncodeDVBitmap(roaring64.BitmapOf(0, 5, 1<<33))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// z85UUID is the 20-character Z85 form of id, as written in `u` paths.
func z85UUID(id uuid.UUID) string { return delta.Z85Encode(id[:]) }

// dvTestBitmaps covers empty, single-row, run, array and multi-bucket bitmaps.
func dvTestBitmaps() []*roaring64.Bitmap {
	run := roaring64.New()
	run.AddRange(10, 100000)
	run.RunOptimize()
	return []*roaring64.Bitmap{
		roaring64.BitmapOf(0),
		roaring64.New(),
		roaring64.BitmapOf(1, 2, 3, 1<<33, 1<<33+7),
		run,
	}
}

func TestEncodeDVFileLoadRoundTrip(t *testing.T) {
	bitmaps := dvTestBitmaps()
	file, descs, err := delta.EncodeDVFile(bitmaps)
	if err != nil {
		t.Fatal(err)
	}
	if file[0] != 1 || len(descs) != len(bitmaps) || descs[0].Offset != 1 {
		t.Fatalf("EncodeDVFile: version %d, %d descs, first offset %d", file[0], len(descs), descs[0].Offset)
	}
	last := descs[len(descs)-1]
	if int(last.Offset+last.SizeInBytes+8) != len(file) {
		t.Fatalf("records do not tile the file: last %+v, file %d bytes", last, len(file))
	}
	dir := t.TempDir()
	id := uuid.New()
	name := "deletion_vector_" + id.String() + ".bin"
	if err := os.MkdirAll(filepath.Join(dir, "xy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "xy", name), file, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := blobstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	pURI := "file://" + (&url.URL{Path: filepath.ToSlash(filepath.Join(dir, "xy", name))}).EscapedPath()
	for i, rec := range descs {
		for _, d := range []*delta.DeletionVector{
			{StorageType: "u", PathOrInlineDV: "xy" + z85UUID(id), Offset: i32(rec.Offset), SizeInBytes: rec.SizeInBytes, Cardinality: rec.Cardinality},
			{StorageType: "p", PathOrInlineDV: pURI, Offset: i32(rec.Offset), SizeInBytes: rec.SizeInBytes, Cardinality: rec.Cardinality},
		} {
			got, err := delta.LoadDeletionVector(ctx, store, store.String(), d)
			if err != nil || !got.Equals(bitmaps[i]) {
				t.Errorf("record %d (%s): LoadDeletionVector = %v, %v; want %v", i, d.StorageType, got, err, bitmaps[i].ToArray())
			}
		}
	}
	// The cardinality of the descriptor is checked against the bitmap.
	d := &delta.DeletionVector{StorageType: "u", PathOrInlineDV: "xy" + z85UUID(id),
		Offset: i32(descs[2].Offset), SizeInBytes: descs[2].SizeInBytes, Cardinality: descs[2].Cardinality + 1}
	_, err = delta.LoadDeletionVector(ctx, store, store.String(), d)
	if !errors.Is(err, delta.ErrCorruptDeletionVector) || !strings.Contains(err.Error(), name) {
		t.Errorf("wrong cardinality: err = %v; want ErrCorruptDeletionVector naming %s", err, name)
	}
}

func TestLoadDeletionVectorErrors(t *testing.T) {
	tableDir, file := readGoldenDVFile(t)
	ctx := context.Background()
	dir := t.TempDir()
	bad := slices.Clone(file)
	bad[len(bad)-2] ^= 0xFF // CRC
	if err := os.WriteFile(filepath.Join(dir, "deletion_vector_0229ec3d-5100-44e1-8e53-702d448da8da.bin"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := blobstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	golden := func(mod func(d *delta.DeletionVector)) *delta.DeletionVector {
		d := &delta.DeletionVector{StorageType: "u", PathOrInlineDV: "0X9F0q2<2yJ-f)Gm2!e0",
			Offset: i32(1), SizeInBytes: 34, Cardinality: 1}
		mod(d)
		return d
	}
	tests := []struct {
		name string
		d    *delta.DeletionVector
		err  error
	}{
		{"flipped CRC", golden(func(*delta.DeletionVector) {}), delta.ErrCorruptDeletionVector},
		{"offset past the record", golden(func(d *delta.DeletionVector) { d.Offset = i32(2) }), delta.ErrCorruptDeletionVector},
		{"offset 0", golden(func(d *delta.DeletionVector) { d.Offset = i32(0) }), delta.ErrCorruptDeletionVector},
		{"size larger than the file", golden(func(d *delta.DeletionVector) { d.SizeInBytes = 1 << 30 }), delta.ErrCorruptDeletionVector},
		{"missing file", golden(func(d *delta.DeletionVector) { d.PathOrInlineDV = "ab" + d.PathOrInlineDV }), delta.ErrNotExist},
		{"p outside the root", golden(func(d *delta.DeletionVector) {
			d.StorageType, d.PathOrInlineDV = "p", "file:"+filepath.ToSlash(tableDir)+"/deletion_vector_0229ec3d-5100-44e1-8e53-702d448da8da.bin"
		}), delta.ErrUnsupportedFeature},
		{"bad inline", &delta.DeletionVector{StorageType: "i", PathOrInlineDV: "0000", SizeInBytes: 4, Cardinality: 1}, delta.ErrCorruptDeletionVector},
		{"inline size beyond text", &delta.DeletionVector{StorageType: "i", PathOrInlineDV: "00000", SizeInBytes: 5, Cardinality: 1}, delta.ErrCorruptDeletionVector},
	}
	for _, tt := range tests {
		bm, err := delta.LoadDeletionVector(ctx, store, store.String(), tt.d)
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: LoadDeletionVector = %v, %v; want %v", tt.name, bm, err, tt.err)
		}
	}
	// Cardinality 0 and nil descriptors need no I/O: the file does not exist.
	for _, d := range []*delta.DeletionVector{nil, {StorageType: "u", PathOrInlineDV: "nothere" + z85UUID(uuid.New()), SizeInBytes: 34}} {
		bm, err := delta.LoadDeletionVector(ctx, store, store.String(), d)
		if err != nil || !bm.IsEmpty() {
			t.Errorf("LoadDeletionVector(%+v) = %v, %v; want empty bitmap", d, bm, err)
		}
	}
}

// dvSpecialCharTemplate is the placeholder Delta's tests put in the `p` DV
// URI of spark-table-with-dv-special-char; it stands for this directory.
const dvSpecialCharTemplate = "{{FOLDER_WITH_SPECIAL_CHAR}}"

// dvFixtureDV is a deletion vector descriptor found in a fixture's log.
type dvFixtureDV struct {
	file       string // the data file it applies to
	dv         *delta.DeletionVector
	numRecords int64 // physical rows of the file, -1 when unknown
}

// dvFixtureDescriptors returns the DV descriptors of the add and remove
// actions of the table's commit files.
func dvFixtureDescriptors(t *testing.T, tableDir string) []dvFixtureDV {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tableDir, "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []dvFixtureDV
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_ = action.Parse(data, func(a *delta.Action) error { // unparsable logs hold no DVs
			switch {
			case a.Add != nil && a.Add.DeletionVector != nil:
				n, ok := a.Add.NumRecords()
				if !ok {
					n = -1
				}
				out = append(out, dvFixtureDV{a.Add.Path, a.Add.DeletionVector, n})
			case a.Remove != nil && a.Remove.DeletionVector != nil:
				out = append(out, dvFixtureDV{a.Remove.Path, a.Remove.DeletionVector, -1})
			}
			return nil
		})
	}
	return out
}

// TestLoadDeletionVectorFixtures loads every DV descriptor of every commit
// of every fixture table and checks its cardinality and that its row
// indexes are within the file's row count.
func TestLoadDeletionVectorFixtures(t *testing.T) {
	root := testenv.Fixtures(t)
	tables, err := filepath.Glob(filepath.Join(root, "*", "*", "table"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	loaded, missing := map[string]int{}, map[string]bool{}
	for _, dir := range tables {
		dvs := dvFixtureDescriptors(t, dir)
		if len(dvs) == 0 {
			continue
		}
		store, err := blobstore.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range dvs {
			d := f.dv
			if strings.Contains(d.PathOrInlineDV, dvSpecialCharTemplate) {
				folder := (&url.URL{Path: filepath.ToSlash(store.String()) + "/folder&with%special char"}).EscapedPath()
				d.PathOrInlineDV = strings.ReplaceAll(d.PathOrInlineDV, dvSpecialCharTemplate, folder)
			}
			bm, err := delta.LoadDeletionVector(ctx, store, store.String(), d)
			if errors.Is(err, delta.ErrNotExist) {
				key, _ := delta.DVRelativeKey(d)
				missing[filepath.Join(dir, key)] = true
				continue
			}
			if err != nil {
				t.Errorf("%s: %s: %v", dir, f.file, err)
				continue
			}
			if bm.GetCardinality() != uint64(d.Cardinality) {
				t.Errorf("%s: %s: cardinality %d, descriptor %d", dir, f.file, bm.GetCardinality(), d.Cardinality)
			}
			if f.numRecords >= 0 && !bm.IsEmpty() && bm.Maximum() >= uint64(f.numRecords) {
				t.Errorf("%s: %s: row index %d >= numRecords %d", dir, f.file, bm.Maximum(), f.numRecords)
			}
			loaded[d.StorageType]++
		}
		store.Close()
	}
	for p := range missing {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists but LoadDeletionVector reported it missing", p)
		}
	}
	t.Logf("loaded DVs by storage type %v; %d DV files not shipped upstream", loaded, len(missing))
	if loaded["u"] < 80 || loaded["i"] < 6 || loaded["p"] < 1 {
		t.Errorf("loaded %v, want at least 80 u, 6 i and 1 p", loaded)
	}
}

// BenchmarkDecodeDVBitmap decodes a large DV: every 7th row of 20M rows
// (about 2.9M deletions, bitmap containers) plus a 5M-row run.
func BenchmarkDecodeDVBitmap(b *testing.B) {
	bm := roaring64.New()
	for i := uint64(0); i < 20_000_000; i += 7 {
		bm.Add(i)
	}
	bm.AddRange(30_000_000, 35_000_000)
	bm.RunOptimize()
	data, err := delta.EncodeDVBitmap(bm)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := delta.DecodeDVBitmap(data); err != nil {
			b.Fatal(err)
		}
	}
}
