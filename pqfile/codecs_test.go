package pqfile

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit/hostilepq"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

type lz4Row struct {
	ID int64 `parquet:"id,plain"`
	V  int64 `parquet:"v,plain"`
}

// LZ4_RAW pages that compress less than 3x (random integers) decode to
// their values, through parquet-go's reader and through a rewrite that
// removes deleted rows: parquet-go v0.32.0 alone read every value wrong,
// without an error (codecs.go replaces its decoder).
func TestLZ4RawPagesDecode(t *testing.T) {
	if _, ok := parquet.LookupCompressionCodec(format.Lz4Raw).(boundedCodec); !ok {
		t.Fatal("parquet-go's LZ4_RAW codec is not replaced: its codec table changed")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]lz4Row, 20000)
	for i := range rows {
		rows[i] = lz4Row{int64(i), int64(rng.Uint64())}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[lz4Row](&buf, parquet.Compression(&parquet.Lz4Raw), parquet.MaxRowsPerRowGroup(5000))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src := buf.Bytes()
	read := func(b []byte) []lz4Row {
		t.Helper()
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]lz4Row, f.NumRows())
		n, err := parquet.NewGenericReader[lz4Row](f).Read(out)
		if int64(n) != f.NumRows() {
			t.Fatalf("read %d of %d rows: %v", n, f.NumRows(), err)
		}
		return out
	}
	bad := 0
	for i, r := range read(src) {
		if r != rows[i] {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d rows read back wrong from LZ4_RAW pages", bad, len(rows))
	}
	// A rewrite re-encodes the row groups with deleted rows from decoded pages.
	del := roaring64.BitmapOf(3, 5001, 12345, 19999)
	var out bytes.Buffer
	if _, err := Rewrite(bytes.NewReader(src), int64(len(src)), del, nil, &out); err != nil {
		t.Fatal(err)
	}
	got := read(out.Bytes())
	k := 0
	for i, r := range rows {
		if del.Contains(uint64(i)) {
			continue
		}
		if got[k] != r {
			t.Fatalf("rewritten row %d is %+v, want %+v", k, got[k], r)
		}
		k++
	}
}

// hostileFile is a file of one required int64 column of n values 0..n-1
// in one page, stored as page makes it from the honest uncompressed page.
func hostileFile(n int, codec format.CompressionCodec, page func(hostilepq.Page) hostilepq.Page) []byte {
	p := hostilepq.Int64Page(false, hostilepq.Ptrs(n, nil))
	return hostilepq.File{Columns: []hostilepq.Column{{Name: "id", Type: format.Int64, Codec: codec,
		Pages: []hostilepq.Page{page(p)}}}}.Bytes()
}

// everyCodec is every codec deltafs decodes.
var everyCodec = []format.CompressionCodec{format.Uncompressed, format.Snappy, format.Gzip, format.Brotli, format.Zstd, format.Lz4Raw}

// Every page decompressed from storage is held to its declared size, in
// every codec, through the page filter (a rewrite without deleted rows)
// and through parquet-go's reader: an honest page reads back, and a page
// that does not decode, inflates past its declared size or short of it
// is corrupt, naming the column and the page, without allocating what the
// stream would inflate to.
func TestEveryDecompressionIsBounded(t *testing.T) {
	const n = 1000
	del := roaring64.BitmapOf(1, 500, 999)
	rewrite := func(src []byte) ([]byte, error) {
		var out bytes.Buffer
		_, err := Rewrite(bytes.NewReader(src), int64(len(src)), del, nil, &out)
		return out.Bytes(), err
	}
	readAll := func(src []byte) ([]int64, error) {
		f, err := parquet.OpenFile(bytes.NewReader(src), int64(len(src)))
		if err != nil {
			return nil, err
		}
		rows := make([]struct {
			ID int64 `parquet:"id"`
		}, f.NumRows())
		k, err := parquet.NewGenericReader[struct {
			ID int64 `parquet:"id"`
		}](f).Read(rows)
		if k == len(rows) {
			err = nil
		}
		ids := make([]int64, k)
		for i := range ids {
			ids[i] = rows[i].ID
		}
		return ids, err
	}
	for _, codec := range everyCodec {
		t.Run(codec.String()+"/honest", func(t *testing.T) {
			src := hostileFile(n, codec, func(p hostilepq.Page) hostilepq.Page { return hostilepq.Compress(p, codec) })
			out, err := rewrite(src)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := readAll(out)
			if err != nil || len(ids) != n-3 || ids[1] != 2 || ids[len(ids)-1] != n-2 {
				t.Fatalf("rewritten: %d ids (%v), err %v", len(ids), ids[:min(3, len(ids))], err)
			}
		})
		if codec == format.Uncompressed {
			continue
		}
		bad := map[string][]byte{
			"undecodable": hostileFile(n, codec, func(p hostilepq.Page) hostilepq.Page { return hostilepq.Undecodable(p, codec) }),
			"declares more": hostileFile(n, codec, func(p hostilepq.Page) hostilepq.Page {
				p = hostilepq.Compress(p, codec)
				p.Uncompressed += 64
				return p
			}),
			"declares less": hostileFile(n, codec, func(p hostilepq.Page) hostilepq.Page {
				p = hostilepq.Compress(p, codec)
				p.Uncompressed -= 8
				return p
			}),
		}
		if codec == format.Gzip || codec == format.Zstd || codec == format.Snappy {
			bomb := hostilepq.Bomb(codec, 8*n+4, 256<<20)
			bad["bomb"] = hostileFile(n, codec, func(p hostilepq.Page) hostilepq.Page { p.Body = bomb.Body; return p })
		}
		for name, src := range bad {
			t.Run(codec.String()+"/"+name, func(t *testing.T) {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, err := rewrite(src)
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `column "id": page at byte`) {
					t.Errorf("rewrite: %v, want ErrCorrupt naming the column and page", err)
				}
				// parquet-go's V2 pages inflate to less than the page's declared
				// size, so through parquet-go a page may be short: then its
				// values must still be the page's.
				if ids, err := readAll(src); err == nil && (name != "declares more" || len(ids) != n || ids[n-1] != n-1) {
					t.Errorf("parquet-go read it as %d values, without an error", len(ids))
				}
				runtime.ReadMemStats(&after)
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
					t.Errorf("allocated %d MiB refusing it", grew>>20)
				}
			})
		}
	}
}

// The entries of parquet-go's codec table are bounded: parquet-go hands
// every page it decompresses to boundedCodec.
func TestParquetGoCodecsAreBounded(t *testing.T) {
	if !codecsBounded {
		t.Fatal("parquet-go's codec table is not the one codecs.go declares")
	}
	for _, c := range everyCodec[1:] {
		if _, ok := parquet.LookupCompressionCodec(c).(boundedCodec); !ok {
			t.Errorf("%v: parquet-go decodes with %T", c, parquet.LookupCompressionCodec(c))
		}
	}
}

// TestCodecTableDeclaration reads the declaration of compressionCodecs in
// the source of the parquet-go this module builds with: codecs.go writes
// into that table through a linkname that nothing type-checks, so a
// parquet-go that declares it otherwise must fail here.
func TestCodecTableDeclaration(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/parquet-go/parquet-go").Output()
	if err != nil {
		testenv.Skip(t, "go list parquet-go: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("parquet-go's sources in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var decl *ast.ValueSpec
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "compressionCodecs" {
				decl = vs
			}
			return decl == nil
		})
	}
	if decl == nil || len(decl.Values) != 1 {
		t.Fatalf("no single declaration of compressionCodecs in %s", dir)
	}
	lit, ok := decl.Values[0].(*ast.CompositeLit)
	if !ok {
		t.Fatalf("compressionCodecs is not a composite literal")
	}
	typ, ok := lit.Type.(*ast.ArrayType)
	elem, _ := typ.Elt.(*ast.SelectorExpr)
	if !ok || typ.Len == nil || elem == nil || fmt.Sprint(elem.X) != "compress" || elem.Sel.Name != "Codec" {
		t.Fatalf("compressionCodecs is not an array of compress.Codec")
	}
	if _, ok := typ.Len.(*ast.Ellipsis); !ok {
		t.Fatalf("compressionCodecs has an explicit length")
	}
	last := ""
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			t.Fatalf("compressionCodecs has an element without an index")
		}
		last = fmt.Sprint(kv.Key)
	}
	if last != "&{format Lz4Raw}" {
		t.Fatalf("compressionCodecs ends at %s, not format.Lz4Raw (7): its length is not %d", last, len(compressionCodecs))
	}
}
