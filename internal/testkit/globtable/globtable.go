// Package globtable writes a Delta table of many small Parquet files in
// partition directories, every file holding the same three rows: the table
// a plain reader's listings and globs are measured (bench/globbench) and
// tested on.
package globtable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
)

// Spec says what to write.
type Spec struct {
	Dir        string // the table root
	Files      int    // data files, file i in partition i % Partitions
	Partitions int    // values of the partition column "region": r00, r01, ... (default 100)
	PerCommit  int    // adds per commit (default 10,000); commits carry no checkpoint
}

// row is the content of every data file: the partition column "region"
// lives in the directory names only, as Spark writes it.
type row struct {
	ID    int64  `parquet:"id"`
	Value string `parquet:"value,optional"`
}

// Generate writes the table of s unless s.Dir holds one already (written
// beside it and renamed into place, so a table found is complete).
func Generate(s Spec) error {
	if _, err := os.Stat(filepath.Join(s.Dir, "_delta_log")); err == nil {
		return nil
	}
	parts, perCommit := s.Partitions, s.PerCommit
	if parts <= 0 {
		parts = 100
	}
	if perCommit <= 0 {
		perCommit = 10_000
	}
	tmp := s.Dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Join(tmp, "_delta_log"), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf)
	if _, err := w.Write([]row{{1, "a"}, {2, "b"}, {3, "c"}}); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	data := buf.Bytes()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"value","type":"string","nullable":true,"metadata":{}},{"name":"region","type":"string","nullable":true,"metadata":{}}]}`
	for v := 0; v*perCommit < s.Files; v++ {
		var log bytes.Buffer
		enc := json.NewEncoder(&log)
		if v == 0 {
			enc.Encode(map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}})
			enc.Encode(map[string]any{"metaData": map[string]any{"id": "globbench", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
				"schemaString": schema, "partitionColumns": []string{"region"}, "configuration": map[string]any{}, "createdTime": 1735689600000}})
		}
		for i := v * perCommit; i < min(s.Files, (v+1)*perCommit); i++ {
			region := fmt.Sprintf("r%02d", i%parts)
			p := fmt.Sprintf("region=%s/part-%07d.parquet", region, i)
			full := filepath.Join(tmp, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(full, data, 0o644); err != nil {
				return err
			}
			enc.Encode(map[string]any{"add": map[string]any{"path": p, "partitionValues": map[string]string{"region": region},
				"size": len(data), "modificationTime": 1735689600000, "dataChange": true,
				"stats": `{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":3},"nullCount":{"id":0}}`}})
		}
		enc.Encode(map[string]any{"commitInfo": map[string]any{"timestamp": 1735689600000 + v*1000, "operation": "WRITE"}})
		if err := os.WriteFile(filepath.Join(tmp, "_delta_log", fmt.Sprintf("%020d.json", v)), log.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return os.Rename(tmp, s.Dir)
}
