package integration

// A bad stored file fails alone: data files whose pages do not decode, or
// inflate to another size than their headers declare, in every codec, cost
// their readers an EIO naming the file, column and page, while the mount
// stays within its decode budget and serves its other files and tables.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/hostilepq"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// pageRows is the rows of each file of writePagesTable: ids 0..pageRows-1.
const pageRows = 1000

// pageFile is a file of one required int64 column "id" of pageRows values
// in one page, under codec, as page makes it from the honest page.
func pageFile(codec format.CompressionCodec, page func(hostilepq.Page) hostilepq.Page) []byte {
	p := hostilepq.Int64Page(false, hostilepq.Ptrs(pageRows, nil))
	return hostilepq.File{Columns: []hostilepq.Column{{Name: "id", Type: format.Int64, Codec: codec,
		Pages: []hostilepq.Page{page(p)}}}}.Bytes()
}

// writePagesTable writes a table of the files (name -> bytes) at version 0;
// the files named in dv carry a deletion vector of rows 1 and 500.
func writePagesTable(t *testing.T, root string, files map[string][]byte, dv map[string]bool) {
	t.Helper()
	var names []string
	var bitmaps []*roaring64.Bitmap
	for name := range files {
		if dv[name] {
			names = append(names, name)
			bitmaps = append(bitmaps, roaring64.BitmapOf(1, 500))
		}
	}
	dvFile, recs, err := delta.EncodeDVFile(bitmaps)
	if err != nil {
		t.Fatal(err)
	}
	uuid := [16]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6}
	if err := os.WriteFile(filepath.Join(root, "deletion_vector_09080706-0504-0302-0100-010203040506.bin"), dvFile, 0o644); err != nil {
		t.Fatal(err)
	}
	dvs := map[string]*delta.DeletionVector{}
	for i, name := range names {
		off := recs[i].Offset
		dvs[name] = &delta.DeletionVector{StorageType: "u", PathOrInlineDV: delta.Z85Encode(uuid[:]), Offset: &off,
			SizeInBytes: recs[i].SizeInBytes, Cardinality: recs[i].Cardinality}
	}
	var log bytes.Buffer
	enc := json.NewEncoder(&log)
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}`
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(enc.Encode(map[string]any{"commitInfo": map[string]any{"timestamp": 1767225600000, "operation": "WRITE"}}))
	must(enc.Encode(map[string]any{"protocol": map[string]any{"minReaderVersion": 3, "minWriterVersion": 7,
		"readerFeatures": []string{"deletionVectors"}, "writerFeatures": []string{"deletionVectors"}}}))
	must(enc.Encode(map[string]any{"metaData": map[string]any{"id": "pages", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": schema, "partitionColumns": []string{}, "configuration": map[string]string{"delta.enableDeletionVectors": "true"}, "createdTime": 1767225600000}}))
	for name, data := range files {
		must(os.WriteFile(filepath.Join(root, name), data, 0o644))
		must(enc.Encode(map[string]any{"add": &delta.Add{Path: name, PartitionValues: map[string]*string{}, Size: int64(len(data)),
			ModificationTime: 1767225600000, DataChange: true, DeletionVector: dvs[name]}}))
	}
	must(os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755))
	must(os.WriteFile(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", 0)), log.Bytes(), 0o644))
}

func TestBadPagesFailAlone(t *testing.T) {
	if testenv.NodeDir(t, "@duckdb/node-api") == "" {
		return
	}
	files := map[string][]byte{}
	dv := map[string]bool{}
	bad := map[string]string{} // file -> what its error must say
	add := func(name string, data []byte, hasDV bool, reason string) {
		files[name], dv[name] = data, hasDV
		if reason != "" {
			bad[name] = reason
		}
	}
	for _, codec := range []format.CompressionCodec{format.Snappy, format.Gzip, format.Brotli, format.Zstd, format.Lz4Raw} {
		c := strings.ToLower(codec.String())
		add("ok-"+c+".parquet", pageFile(codec, func(p hostilepq.Page) hostilepq.Page { return hostilepq.Compress(p, codec) }), true, "")
		add("undecodable-"+c+".parquet", pageFile(codec, func(p hostilepq.Page) hostilepq.Page { return hostilepq.Undecodable(p, codec) }), true,
			"page does not inflate to its declared size")
		add("wrongsize-"+c+".parquet", pageFile(codec, func(p hostilepq.Page) hostilepq.Page {
			p = hostilepq.Compress(p, codec)
			p.Uncompressed += 64
			return p
		}), true, "page does not inflate to its declared size")
	}
	for _, codec := range []format.CompressionCodec{format.Gzip, format.Zstd, format.Snappy} {
		bomb := hostilepq.Bomb(codec, 8*pageRows, 2<<30)
		add("bomb-"+strings.ToLower(codec.String())+".parquet", pageFile(codec, func(p hostilepq.Page) hostilepq.Page { p.Body = bomb.Body; return p }), true,
			"page does not inflate to its declared size")
	}
	// A page declaring 1 GiB: over the page limit, refused before anything is allocated.
	add("huge-gzip.parquet", pageFile(format.Gzip, func(p hostilepq.Page) hostilepq.Page {
		p = hostilepq.Compress(p, format.Gzip)
		p.Uncompressed = 1 << 30
		return p
	}), true, "over the limit")
	// Without deleted rows a file is served as stored: its bytes are the reader's to judge.
	plain := pageFile(format.Gzip, func(p hostilepq.Page) hostilepq.Page { return hostilepq.Undecodable(p, format.Gzip) })
	add("plain-undecodable.parquet", plain, false, "")

	bad0 := t.TempDir()
	writePagesTable(t, bad0, files, dv)
	good := testenv.CopyFixture(t, fixtureAppend)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "bad", URL: bad0}, {Name: "good", URL: good}}})
	glob := fmt.Sprintf("SELECT count(*), sum(number) FROM read_parquet('%s')", filepath.Join(mnt, "good", "@latest", "*.parquet"))
	want := duckdbQuery(t, glob)
	snap := filepath.Join(mnt, "bad", "@v0")

	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	base := vmHWM(t)
	for name, reason := range bad {
		start := time.Now()
		p := filepath.Join(snap, name)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("stat %s: %v; a listed file always stats", name, err)
		}
		_, err := os.ReadFile(p)
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: read gave %v, want EIO", name, err)
		}
		if took := time.Since(start); took > 10*time.Second { // a refusal that ran away, not a speed check
			t.Errorf("%s: refused after %v", name, took)
		}
		st := readTableStatus(t, mnt, "bad")
		if n := len(st.RecentDataErrors); n == 0 {
			t.Errorf("%s: no data error in the status file", name)
		} else if e := st.RecentDataErrors[n-1]; e.File != name || e.Version != 0 || e.Errno != "EIO" ||
			!strings.Contains(e.Error, reason) || !strings.Contains(e.Error, `column "id"`) {
			t.Errorf("%s: status file's data error %+v, want EIO naming the file, version 0, column \"id\" and %q", name, e, reason)
		}
	}
	if grew := vmHWM(t) - base; grew > 256<<20 {
		t.Errorf("peak RSS grew by %d MiB refusing the files, over 256 MiB", grew>>20)
	}
	for name := range files {
		if _, isBad := bad[name]; isBad {
			continue
		}
		data, err := os.ReadFile(filepath.Join(snap, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !dv[name] && !bytes.Equal(data, files[name]) {
			t.Errorf("%s: served bytes differ from the stored file", name)
		}
	}
	ok := duckdbQuery(t, fmt.Sprintf("SELECT count(*), sum(id) FROM read_parquet('%s')", filepath.Join(snap, "ok-*.parquet")))
	if w := fmt.Sprint([][]string{{"4990", fmt.Sprint(5 * (pageRows*(pageRows-1)/2 - 501))}}); fmt.Sprint(ok) != w {
		t.Errorf("DuckDB over the honest files: %v, want %v", ok, w)
	}
	// A plain reader's glob over the whole snapshot fails on a bad file:
	// the file never vanishes from it.
	for name := range bad {
		one := filepath.Join(snap, "*"+strings.TrimSuffix(name, ".parquet")+"*")
		if rows, err, ok := duckdbTry(t, fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", one)); ok && err == nil {
			t.Errorf("DuckDB over %s gave %v, want an error", one, rows)
		}
	}
	all := fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", filepath.Join(snap, "*.parquet"))
	if rows, err, ok := duckdbTry(t, all); ok && (err == nil || !strings.Contains(err.Error(), "Input/output error")) {
		t.Errorf("DuckDB over every file of the snapshot: %v, %v; want the open's EIO", rows, err)
	}
	if got := duckdbQuery(t, glob); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DuckDB over the other table after the refusals: %v, want %v", got, want)
	}
}
