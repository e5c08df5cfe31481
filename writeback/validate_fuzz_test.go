package writeback

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// validateFuzzTables are the tables inbox files are validated against:
// flat, partitioned, nested with column mapping, and non-nullable columns.
var validateFuzzTables = []string{
	"dat/basic_append",
	"dat/basic_partitioned",
	"delta/golden-table-with-columnmapping-mode-name",
	"delta-rs/delta-stats-optional",
}

// FuzzValidate hands arbitrary bytes to the inbox validator as a staged
// file (seeds: the fixtures' data files). It must never panic, must refuse
// with ErrInvalidFile (never another error: the tables are readable), and
// a file it accepts must open as Parquet. The fixtures are read in place:
// Validate writes nothing.
func FuzzValidate(f *testing.F) {
	var tables []*Committer
	for _, name := range validateFuzzTables {
		dir := testenv.Fixture(f, name)
		tables = append(tables, New(openTable(f, dir), Options{}))
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") && fi.Size() < 16<<10 {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(uint8(len(tables)-1), b)
				}
			}
			return nil
		})
	}
	f.Add(uint8(0), []byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Add(uint8(0), []byte("letter,number\na,1\n"))
	staging := f.TempDir()
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		c := tables[int(which)%len(tables)]
		tmp, err := os.CreateTemp(staging, "staged-*.parquet")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(data); err != nil {
			t.Fatal(err)
		}
		tmp.Close()
		var part map[string]*string
		if strings.Contains(validateFuzzTables[int(which)%len(tables)], "partitioned") {
			part = map[string]*string{"letter": ptr("a")}
		}
		err = c.Validate(context.Background(), File{LocalPath: tmp.Name(), Name: "f.parquet", PartitionValues: part})
		if err != nil {
			if !errors.Is(err, ErrInvalidFile) {
				t.Fatalf("Validate error %v does not wrap ErrInvalidFile", err)
			}
			return
		}
		if _, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("accepted a file parquet-go cannot open: %v", err)
		}
	})
}
