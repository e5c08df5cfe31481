package integration

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// geoRow is a row of a geospatial table: a geometry column is WKB.
type geoRow struct {
	ID   int64  `parquet:"id"`
	Geom []byte `parquet:"geom,optional"`
}

// A table with the geospatial reader feature is read (delta-kernel-rs
// reads it too): its geometry column's WKB bytes come through the mount
// unchanged, to DuckDB as to any reader by path, and the kernel-rs
// fixture table-with-geo (no data) mounts with its one version. Appends
// stay refused: the feature's statistics are not computed here.
func TestGeospatialTablesAreRead(t *testing.T) {
	root := filepath.Join(t.TempDir(), "geo")
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	// WKB points (little-endian, type 1): POINT(1 2) and POINT(-3.5 40).
	points := []string{"0101000000000000000000f03f0000000000000040", "01010000000000000000000cc00000000000004440"}
	var rows []geoRow
	for i, p := range points {
		b, _ := hex.DecodeString(p)
		rows = append(rows, geoRow{ID: int64(i), Geom: b})
	}
	name := "part-00000-geo.parquet"
	f, err := os.Create(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[geoRow](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fi, _ := f.Stat()
	f.Close()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"geom","type":"geometry(OGC:CRS84)","nullable":true,"metadata":{}}]}`
	lines := []string{
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["geospatial"],"writerFeatures":["geospatial"]}}`,
		fmt.Sprintf(`{"metaData":{"id":"geo","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":0}}`, schema),
		fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":0,"dataChange":true,"stats":"{\"numRecords\":2}"}}`, name, fi.Size()),
	}
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(delta.CommitKey(0))), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "geo", URL: root}}})
	got := duckdbQuery(t, "select id, hex(geom) from read_parquet('"+filepath.Join(mnt, "geo", "@latest")+"/*.parquet') order by id")
	if got != nil {
		for i, p := range points {
			if len(got) != len(points) || got[i][0] != fmt.Sprint(i) || !strings.EqualFold(got[i][1], p) {
				t.Fatalf("DuckDB read %v, want the WKB points %v", got, points)
			}
		}
	}
	err = os.WriteFile(filepath.Join(mnt, "geo", "inbox", "more.parquet"), []byte("PAR1"), 0o644)
	if err == nil {
		t.Errorf("an append to a geospatial table was accepted")
	}
	t.Logf("append refused: %v", err)
	kernel := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "kernel", URL: testenv.Fixture(t, "delta-kernel-rs/table-with-geo")}}})
	if _, err := os.Stat(filepath.Join(kernel, "kernel", "@v0")); err != nil {
		t.Errorf("the kernel-rs geospatial fixture: %v", err)
	}
}
