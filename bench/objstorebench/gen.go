//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/deltafs/deltafs/delta"
)

// commitTime is the timestamp of the generated commits (ms).
const commitTime = 1_767_225_600_000 // 2026-01-01T00:00:00Z

// partitions of the `find` table: its files spread over p=0..partitions-1.
const partitions = 100

// commitBody returns version 0 of a table: commitInfo, protocol, metaData
// (partitioned by part when part is set) and the adds, one JSON line each.
func commitBody(schema string, part string, adds []*delta.Add) ([]byte, error) {
	cols := []string{}
	if part != "" {
		cols = []string{part}
	}
	actions := []map[string]any{
		{"commitInfo": map[string]any{"timestamp": commitTime, "operation": "WRITE"}},
		{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}},
		{"metaData": map[string]any{"id": uuid.NewString(), "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
			"schemaString": schema, "partitionColumns": cols, "configuration": map[string]string{}, "createdTime": commitTime}},
	}
	for _, a := range adds {
		actions = append(actions, map[string]any{"add": a})
	}
	var buf bytes.Buffer
	for _, a := range actions {
		line, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// writeObjectTable writes a table at prefix in the bucket whose one data
// file holds size random bytes (served byte for byte, so the content need
// not be Parquet). It returns the file's name.
func writeObjectTable(srv *s3Server, prefix string, size int64) (string, error) {
	st, err := srv.open(prefix)
	if err != nil {
		return "", err
	}
	defer st.Close()
	ctx := context.Background()
	name := "part-00000-6a1b9f3e-0c1d-4f6e-9a7b-2c3d4e5f6a7b-c000.snappy.parquet"
	if err := st.Put(ctx, name, io.LimitReader(rand.NewChaCha8([32]byte{1}), size)); err != nil {
		return "", err
	}
	body, err := commitBody(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`, "",
		[]*delta.Add{{Path: name, PartitionValues: map[string]*string{}, Size: size, ModificationTime: commitTime, DataChange: true}})
	if err != nil {
		return "", err
	}
	return name, st.Put(ctx, delta.CommitKey(0), bytes.NewReader(body))
}

// writeManyTable writes the log of a table at prefix in the bucket with n
// files spread over partitions p=0..99, and the same tree of empty files
// under local (the native baseline). The data objects are not uploaded:
// `find` reads names and attributes only, which come from the log.
func writeManyTable(srv *s3Server, prefix, local string, n int) error {
	adds := make([]*delta.Add, n)
	for i := range adds {
		p := fmt.Sprint(i % partitions)
		path := fmt.Sprintf("p=%s/part-%05d-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-c000.snappy.parquet", p, i)
		adds[i] = &delta.Add{Path: path, PartitionValues: map[string]*string{"p": &p}, Size: 64, ModificationTime: commitTime, DataChange: true}
		if err := os.MkdirAll(filepath.Join(local, "p="+p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(local, filepath.FromSlash(path)), nil, 0o644); err != nil {
			return err
		}
	}
	body, err := commitBody(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},`+
		`{"name":"p","type":"string","nullable":true,"metadata":{}}]}`, "p", adds)
	if err != nil {
		return err
	}
	st, err := srv.open(prefix)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Put(context.Background(), delta.CommitKey(0), bytes.NewReader(body))
}
