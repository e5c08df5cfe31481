package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/mount"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// cdfTable writes a table with the change data feed on: version 0 holds
// bulk files added without dataChange (so that every snapshot has that
// many live files, none of them a change), and each version 1..versions-1
// adds one real Parquet file of three rows (its change: inserts) and has a
// checkpoint (so that each version's snapshot is built apart, sharing no
// state with another's). It returns the table's root.
func cdfTable(t *testing.T, versions, bulk int) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "cdf")
	logDir := filepath.Join(root, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v := range versions {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		ts := start.Add(time.Duration(v) * time.Minute)
		enc.Encode(map[string]any{"commitInfo": map[string]any{"timestamp": ts.UnixMilli(), "operation": "WRITE"}})
		if v == 0 {
			enc.Encode(map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 4}})
			enc.Encode(map[string]any{"metaData": map[string]any{"id": "cdf-budget", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
				"schemaString":     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`,
				"partitionColumns": []string{}, "configuration": map[string]string{"delta.enableChangeDataFeed": "true"}, "createdTime": ts.UnixMilli()}})
			for i := range bulk {
				enc.Encode(map[string]any{"add": map[string]any{"path": fmt.Sprintf("bulk/part-%05d-6f1c2e8a-4c4e-a3b8-da3c214613d0.c000.snappy.parquet", i),
					"partitionValues": map[string]string{}, "size": 4096 + i, "modificationTime": ts.UnixMilli(), "dataChange": false}})
			}
		} else {
			data := parquetBytes(t, []cdfRow{{ID: ptr(int64(10 * v))}, {ID: ptr(int64(10*v + 1))}, {ID: ptr(int64(10*v + 2))}})
			name := fmt.Sprintf("part-v%03d.parquet", v)
			if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			enc.Encode(map[string]any{"add": map[string]any{"path": name, "partitionValues": map[string]string{}, "size": len(data),
				"modificationTime": ts.UnixMilli(), "dataChange": true}})
		}
		name := filepath.Join(logDir, fmt.Sprintf("%020d.json", v))
		if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	st, err := blobstore.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl := delta.Open(st, delta.Options{})
	for v := int64(1); v < int64(versions); v++ {
		snap, err := tbl.Snapshot(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if err := delta.WriteCheckpoint(ctx, st, snap); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// changesPlanStatus reads the mount's plans of @changes ranges from its
// status file.
func changesPlanStatus(t *testing.T, mnt string) (bytes int64, plans int, budget int64) {
	t.Helper()
	c := readMountCaches(t, mnt).Plans
	return c.Bytes, c.Plans, c.Budget
}

// rangeEntryBytes bounds what one entry the kernel keeps under @changes
// costs the mount (a range directory's or a change file's inode: go-fuse's
// Inode and the node, which holds its bounds or its change file, never a
// plan or a snapshot): docs/operations.md, "Memory budgets".
const rangeEntryBytes = 1 << 10

// Listing 1,000 distinct @changes ranges of one table (the kernel keeping
// every range directory and change file it saw) holds the mount's live
// heap within its budgets: the snapshot cache's (with its commits'
// eighth), the range plans' eighth, and rangeEntryBytes per entry held.
// The plans and snapshots evicted meanwhile are made again when used: the
// first range, read again at the end, gives the same files and bytes.
func TestChangesRangesStayInBudget(t *testing.T) {
	const versions, bulk = 46, 1000 // 1,081 ranges; every snapshot 1,000+ files (about half the snapshot cache)
	const budget = 1 << 20
	root := cdfTable(t, versions, bulk)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, ReadOnly: true, SnapshotCacheSize: budget})
	changes := filepath.Join(mnt, "t", "@changes")
	read := func(dir string) map[string][]byte {
		t.Helper()
		out := map[string][]byte{}
		for _, name := range readDirNames(t, dir) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("read %s/%s: %v", dir, name, err)
			}
			out[name] = b
		}
		return out
	}
	first := filepath.Join(changes, "v1..v40")
	want := read(first)
	if len(want) != 40 {
		t.Fatalf("%s: %d files, want 40", first, len(want))
	}
	base := testenv.LiveHeap()
	ranges, entries := 0, 0
	for to := int64(0); to < versions && ranges < 1000; to++ {
		for from := int64(0); from <= to && ranges < 1000; from++ {
			dir := filepath.Join(changes, fmt.Sprintf("v%d..v%d", from, to))
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatalf("ls %s: %v", dir, err)
			}
			if n := to - max(from, 1) + 1; int64(len(ents)) != n {
				t.Fatalf("ls %s: %d files, want %d", dir, len(ents), n)
			}
			ranges++
			entries += 1 + len(ents)
		}
	}
	grew := testenv.LiveHeap() - base
	planBytes, plans, planBudget := changesPlanStatus(t, mnt)
	snapBytes, states, snapBudget := snapshotCacheStatus(t, mnt)
	t.Logf("%d ranges listed, %d entries held by the kernel: live heap grew %.1f MiB (%d bytes an entry); plans %d (%d bytes, budget %d), snapshot cache %d entries (%d bytes, budget %d)",
		ranges, entries, float64(grew)/(1<<20), grew/int64(entries), plans, planBytes, planBudget, states, snapBytes, snapBudget)
	if planBudget != budget/8 || planBytes > planBudget {
		t.Errorf("plans hold %d bytes, budget %d (want %d, an eighth of --snapshot-cache)", planBytes, planBudget, budget/8)
	}
	if plans >= ranges {
		t.Errorf("%d plans kept for %d ranges: none evicted", plans, ranges)
	}
	if snapBytes > budget && states > 1 {
		t.Errorf("snapshot cache holds %d bytes in %d entries, budget %d", snapBytes, states, budget)
	}
	// The snapshot cache may keep one snapshot larger than its budget alone.
	if limit := max(budget, snapBytes) + budget/8 + budget/8 + int64(entries)*rangeEntryBytes; grew > limit {
		t.Errorf("live heap grew by %d bytes listing %d ranges, over the budgets' %d (snapshot cache %d, commits and plans an eighth of %d each, %d bytes for each of %d entries)",
			grew, ranges, limit, max(budget, snapBytes), budget, rangeEntryBytes, entries)
	}
	got := read(first)
	if !slices.Equal(sortedKeys(got), sortedKeys(want)) {
		t.Fatalf("%s read again: files %v, first %v", first, sortedKeys(got), sortedKeys(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s/%s read again: other bytes", first, name)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
