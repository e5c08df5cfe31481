package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// The log replay benchmarks run on tables generated here, on local disk:
//   - "checkpointed": 10,000 commits of 10 adds each (100,000 live files),
//     with checkpoints written at versions 5000 and 9990 (the versions the
//     benchmark reads through; writing all 999 intermediate checkpoints
//     would add nothing but setup time) and _last_checkpoint at 9990;
//   - "commits-only": 2,000 commits of 10 adds, no checkpoint.
//
// Each iteration opens a fresh Table (no cache) and builds one snapshot.
// BenchmarkReplayFloor decodes the 9990 checkpoint with parquet-go alone:
// the floor that building the latest snapshot is compared with.
const (
	benchCommits      = 10_000
	benchFilesPerCmt  = 10
	benchNoCpCommits  = 2_000
	benchCheckpointAt = 9990
)

var replayTables struct {
	once        sync.Once
	checkpoints string
	commitsOnly string
	err         error
}

func replayBenchTables(b *testing.B) (checkpointed, commitsOnly string) {
	replayTables.once.Do(func() {
		dir, err := os.MkdirTemp("", "deltafs-replay-bench-")
		if err != nil {
			replayTables.err = err
			return
		}
		replayTables.checkpoints = filepath.Join(dir, "checkpointed")
		replayTables.commitsOnly = filepath.Join(dir, "commits-only")
		if err := genCommits(replayTables.checkpoints, benchCommits); err != nil {
			replayTables.err = err
			return
		}
		if err := genCommits(replayTables.commitsOnly, benchNoCpCommits); err != nil {
			replayTables.err = err
			return
		}
		replayTables.err = genCheckpoints(replayTables.checkpoints, 5000, benchCheckpointAt)
	})
	if replayTables.err != nil {
		b.Fatal(replayTables.err)
	}
	return replayTables.checkpoints, replayTables.commitsOnly
}

// genCommits writes n commits of benchFilesPerCmt adds each.
func genCommits(root string, n int) error {
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		return err
	}
	md, _ := json.Marshal(Metadata{
		ID: "bench", Format: Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"date","type":"string","nullable":true,"metadata":{}}]}`,
		PartitionColumns: []string{"date"}, Configuration: map[string]string{},
	})
	for v := 0; v < n; v++ {
		var buf bytes.Buffer
		fmt.Fprintf(&buf, `{"commitInfo":{"timestamp":%d,"operation":"WRITE","operationParameters":{"mode":"Append"}}}`+"\n", 1_700_000_000_000+v)
		if v == 0 {
			buf.WriteString(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n")
			fmt.Fprintf(&buf, `{"metaData":%s}`+"\n", md)
		}
		for f := 0; f < benchFilesPerCmt; f++ {
			date := fmt.Sprintf("2024-01-%02d", 1+(v+f)%28)
			fmt.Fprintf(&buf, `{"add":{"path":"date=%s/part-%05d-%08d-c000.snappy.parquet","partitionValues":{"date":"%s"},"size":%d,"modificationTime":%d,"dataChange":true,"stats":"{\"numRecords\":%d,\"minValues\":{\"id\":%d},\"maxValues\":{\"id\":%d},\"nullCount\":{\"id\":0}}"}}`+"\n",
				date, f, v, date, 1<<20+v, 1_700_000_000_000+v, 1000+f, v*1000, v*1000+999)
		}
		if err := os.WriteFile(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", v)), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// genCheckpoints replays the table to each version and writes a classic
// checkpoint of the state, then points _last_checkpoint at the last one.
func genCheckpoints(root string, versions ...int64) error {
	ctx := context.Background()
	t := Open(dirStore{root}, Options{})
	for _, v := range versions {
		s, err := t.Snapshot(ctx, v)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := writeStateCheckpoint(&buf, s.state); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(CheckpointKey(v))), buf.Bytes(), 0o644); err != nil {
			return err
		}
		lc := fmt.Sprintf(`{"version":%d,"size":%d}`, v, len(s.Files())+2)
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(LastCheckpointKey)), []byte(lc), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeStateCheckpoint writes st as a checkpoint with this package's codec.
func writeStateCheckpoint(w io.Writer, st *tableState) error {
	_, err := checkpoint.Encode(w, &checkpoint.State{
		Protocol: st.protocol, Metadata: st.metadata, Txns: st.txns, Domains: st.domains,
		Files: st.files, Tombstones: st.tombstones,
	})
	return err
}

// BenchmarkReplay builds snapshots of the generated tables from scratch.
func BenchmarkReplay(b *testing.B) {
	checkpointed, commitsOnly := replayBenchTables(b)
	cases := []struct {
		name    string
		root    string
		version int64
		files   int
	}{
		{"latest-100k-files-from-checkpoint", checkpointed, -1, benchCommits * benchFilesPerCmt},
		{"v5000-from-checkpoint", checkpointed, 5000, 5001 * benchFilesPerCmt},
		{"latest-2000-commits-no-checkpoint", commitsOnly, -1, benchNoCpCommits * benchFilesPerCmt},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			st := dirStore{c.root}
			b.ReportAllocs()
			peak := testenv.StartHeapPeak()
			for b.Loop() {
				s, err := Open(st, Options{}).Snapshot(ctx, c.version)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Files()) != c.files {
					b.Fatalf("%d live files, want %d", len(s.Files()), c.files)
				}
			}
			peak.Report(b)
		})
	}
}

// BenchmarkReplayFloor decodes the checkpoint the latest snapshot is built
// from with parquet-go's generic row reader, reading the file as replay does.
func BenchmarkReplayFloor(b *testing.B) {
	checkpointed, _ := replayBenchTables(b)
	path := filepath.Join(checkpointed, filepath.FromSlash(CheckpointKey(benchCheckpointAt)))
	b.ReportAllocs()
	peak := testenv.StartHeapPeak()
	for b.Loop() {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := testenv.DecodeParquetRows(data); err != nil {
			b.Fatal(err)
		}
	}
	peak.Report(b)
}
