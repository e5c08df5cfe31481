package pqfile

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// FuzzPages serves mutated data files the ways a mount does: without
// deleted rows (the page filter, and parquet-go re-encoding what it does
// not take) and with a constant column added (the splice, or the decoded
// footer). The seeds are real data files of the shared fixtures (Spark,
// delta-rs and delta-kernel writers) and generated files in every codec;
// the fuzzer mutates them anywhere, and (pos, xor) flips a byte it picks.
// Nothing may panic, and one file may not make the package allocate more
// than a few pages of the page limit (lowered to 4 MiB here) and what its
// own size explains.
func FuzzPages(f *testing.F) {
	for _, src := range pageSeeds(f) {
		f.Add(src, uint32(len(src)/3), byte(0), uint64(2))
	}
	pageLimit = 4 << 20 // the same bound, smaller: fresh memory is dear, and no seed needs more
	defer func() { pageLimit = MaxPageBytes }()
	f.Fuzz(func(t *testing.T, src []byte, pos uint32, xor byte, seed uint64) {
		if len(src) > 1<<20 {
			return
		}
		if xor != 0 && len(src) > 0 {
			src = bytes.Clone(src)
			src[int(pos)%len(src)] ^= xor
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		servePages(src, seed)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(8*pageLimit)+64*uint64(len(src))+(16<<20) {
			t.Fatalf("serving a file of %d bytes allocated %d MiB", len(src), grew>>20)
		}
	})
}

// servePages serves src as a mount would, ignoring the errors (a corrupt
// file is refused; only panics and allocations matter here).
func servePages(src []byte, seed uint64) {
	r, size := bytes.NewReader(src), int64(len(src))
	if p, err := NewPlan(r, size, nil, nil); err == nil {
		del := fuzzDeletions(p.NumRows(), seed)
		Rewrite(r, size, del, nil, io.Discard)
	}
	f, err := OpenFile(r, size)
	if err != nil {
		return
	}
	s := &Shape{Key: "fuzz"}
	for _, fld := range f.Schema().Fields() {
		s.Columns = append(s.Columns, ShapeColumn{Name: fld.Name()})
	}
	s.Columns = append(s.Columns, ShapeColumn{Schema: []format.SchemaElement{optLeaf("p", format.ByteArray, &format.StringType{})},
		Const: &Constant{Plain: []byte("eu")}})
	SplicedSize(r, size, s)
	if p, err := NewShapedPlan(r, size, nil, nil, s); err == nil {
		p.WriteLayout(io.Discard)
	}
}

// pageSeeds returns small data files of the shared fixtures, up to three
// per codec, and generated files in every codec.
func pageSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	rows := genRows(60)
	for _, codec := range []format.CompressionCodec{format.Uncompressed, format.Snappy, format.Gzip, format.Brotli, format.Zstd, format.Lz4Raw} {
		seeds = append(seeds, genFile(f, rows, 25, parquet.LookupCompressionCodec(codec)))
	}
	dir := testenv.Fixtures(f)
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") {
			if fi, err := d.Info(); err == nil && fi.Size() < 64<<10 {
				paths = append(paths, p)
			}
		}
		return nil
	})
	sort.Strings(paths)
	per := map[format.CompressionCodec]int{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		pf, err := OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil || len(pf.Metadata().RowGroups) == 0 || len(pf.Metadata().RowGroups[0].Columns) == 0 {
			continue
		}
		codec := pf.Metadata().RowGroups[0].Columns[0].MetaData.Codec
		if per[codec] < 3 {
			per[codec]++
			seeds = append(seeds, b)
		}
	}
	return seeds
}
