package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/parquet-go/parquet-go"
)

// cwTruncateLog removes every commit before v and every checkpoint but
// v's classic one, so that v can only be built through that checkpoint.
func cwTruncateLog(t *testing.T, root string, v int64) {
	t.Helper()
	dir := filepath.Join(root, "_delta_log")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		f, ok := ParseLogName(e.Name())
		keep := !ok || (f.Kind == KindCommit && f.Version >= v) || LogDir+e.Name() == CheckpointKey(v)
		if !keep || e.Name() == "_sidecars" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestWriteCheckpointRebuildsSnapshot(t *testing.T) {
	for _, fixture := range []string{
		"delta-kernel-rs/golden-dv-partitioned-with-checkpoint",       // DVs, partitions, tombstones
		"delta-kernel-rs/app-txn-with-last-updated",                   // txns
		"delta-rs/table_with_liquid_clustering",                       // domains, row tracking
		"delta/golden-table-with-columnmapping-mode-name",             // column mapping
		"delta-kernel-rs/golden-basic-with-inserts-overwrite-restore", // removes, re-adds
		"delta-kernel-rs/v2-checkpoints-parquet-without-sidecars",     // v2Checkpoint
		"delta-kernel-rs/v2-parquet-sidecars-struct-stats-only",       // sidecars, stats_parsed only
	} {
		t.Run(fixture, func(t *testing.T) {
			ctx := context.Background()
			root := testenv.CopyFixture(t, fixture)
			store := dirStore{root: root}
			orig, err := Open(store, Options{}).Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteCheckpoint(ctx, store, orig); err != nil {
				t.Fatal(err)
			}
			cwCheckLastCheckpoint(t, store, orig)
			cwTruncateLog(t, root, orig.Version())
			got, err := Open(store, Options{}).Latest(ctx)
			if err != nil {
				t.Fatalf("open through the written checkpoint: %v", err)
			}
			if got.Version() != orig.Version() {
				t.Fatalf("version %d, want %d", got.Version(), orig.Version())
			}
			cwCompareSnapshots(t, orig, got)
		})
	}
}

// cwCompareSnapshots checks that got (read through a written checkpoint)
// holds the same table state as want.
func cwCompareSnapshots(t *testing.T, want, got *Snapshot) {
	t.Helper()
	if !reflect.DeepEqual(got.Protocol(), want.Protocol()) {
		t.Errorf("protocol %s, want %s", jsonOf(got.Protocol()), jsonOf(want.Protocol()))
	}
	if !reflect.DeepEqual(got.Metadata(), want.Metadata()) {
		t.Errorf("metaData %s, want %s", jsonOf(got.Metadata()), jsonOf(want.Metadata()))
	}
	if len(got.Files()) != len(want.Files()) {
		t.Errorf("%d live files, want %d", len(got.Files()), len(want.Files()))
	}
	wantFiles := map[string]*Add{}
	for _, a := range want.Files() {
		wantFiles[a.Key()] = cwNormalAdd(a)
	}
	for _, a := range got.Files() {
		if w := wantFiles[a.Key()]; !reflect.DeepEqual(cwNormalAdd(a), w) {
			t.Errorf("add %s\n got %s\nwant %s", a.Path, jsonOf(cwNormalAdd(a)), jsonOf(w))
		}
		cwCompareDV(t, want, got, a)
	}
	wantRemoves := map[string]*Remove{}
	for _, r := range want.Tombstones() {
		c := *r
		c.Stats, c.Tags = "", nil // checkpoints carry neither
		wantRemoves[r.Key()] = &c
	}
	if len(got.Tombstones()) != len(wantRemoves) {
		t.Errorf("%d tombstones, want %d", len(got.Tombstones()), len(wantRemoves))
	}
	for _, r := range got.Tombstones() {
		if w := wantRemoves[r.Key()]; !reflect.DeepEqual(r, w) {
			t.Errorf("remove %s\n got %s\nwant %s", r.Path, jsonOf(r), jsonOf(w))
		}
	}
	if !reflect.DeepEqual(got.state.txns, want.state.txns) {
		t.Errorf("txns %s, want %s", jsonOf(got.state.txns), jsonOf(want.state.txns))
	}
	if !reflect.DeepEqual(got.state.domains, want.state.domains) {
		t.Errorf("domains %s, want %s", jsonOf(got.state.domains), jsonOf(want.state.domains))
	}
}

// cwNormalAdd returns a copy of a with its row count in the stats JSON, as
// the writer puts it when only stats_parsed carried it.
func cwNormalAdd(a *Add) *Add {
	c := *a
	if n, ok := a.NumRecords(); ok && a.Stats == "" {
		c.Stats = `{"numRecords":` + jsonOf(n) + `}`
	}
	c.NumRecordsParsed = nil
	return &c
}

// cwCompareDV checks that a's deletion vector loads to the same rows
// through both snapshots (the DV files were copied with the table).
func cwCompareDV(t *testing.T, want, got *Snapshot, a *Add) {
	t.Helper()
	if a.DeletionVector == nil {
		return
	}
	ctx := context.Background()
	g, err := got.DeletedRows(ctx, a)
	if err != nil {
		t.Errorf("DV of %s: %v", a.Path, err)
		return
	}
	for _, w := range want.Files() {
		if w.Key() == a.Key() {
			wb, err := want.DeletedRows(ctx, w)
			if err != nil || !wb.Equals(g) {
				t.Errorf("DV of %s: %d rows, want %v (%v)", a.Path, g.GetCardinality(), wb, err)
			}
		}
	}
}

// cwCheckLastCheckpoint checks the hint and that checkpoint.ReadActions reads
// the file back with one row per action of the snapshot.
func cwCheckLastCheckpoint(t *testing.T, s dirStore, snap *Snapshot) {
	t.Helper()
	ctx := context.Background()
	lc, ok, err := readLastCheckpoint(ctx, s)
	if err != nil || !ok || lc.Checksum == "" {
		t.Fatalf("_last_checkpoint: ok=%v err=%v checksum=%q", ok, err, lc.Checksum)
	}
	data, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(CheckpointKey(snap.Version()))))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	err = checkpoint.ReadActions(bytes.NewReader(data), int64(len(data)), func(a *Action) error {
		var m map[string]json.RawMessage
		b, _ := json.Marshal(a)
		_ = json.Unmarshal(b, &m)
		for k := range m {
			counts[k]++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("checkpoint.ReadActions: %v", err)
	}
	rows := counts["add"] + counts["remove"] + counts["metaData"] + counts["protocol"] + counts["txn"] + counts["domainMetadata"] + counts["checkpointMetadata"]
	if lc.Version != snap.Version() || lc.Size != rows || *lc.SizeInBytes != int64(len(data)) || *lc.NumOfAddFiles != int64(len(snap.Files())) {
		t.Errorf("_last_checkpoint %s; want version %d, size %d, sizeInBytes %d, numOfAddFiles %d",
			jsonOf(lc), snap.Version(), rows, len(data), len(snap.Files()))
	}
	want := map[string]int64{"add": int64(len(snap.Files())), "remove": int64(len(snap.Tombstones())),
		"metaData": 1, "protocol": 1, "txn": int64(len(snap.state.txns)), "domainMetadata": int64(len(snap.state.domains))}
	if cwV2(snap) {
		want["checkpointMetadata"] = 1
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%d %s rows, want %d", counts[k], k, n)
		}
	}
}

func cwV2(snap *Snapshot) bool {
	for _, f := range snap.Protocol().WriterFeatures {
		if f == "v2Checkpoint" {
			return true
		}
	}
	return false
}

// cwLeaves returns the leaf columns of a Parquet file by dotted path, with
// a description of their physical type, logical type and repetition.
func cwLeaves(t *testing.T, data []byte) (paths []string, desc map[string]string) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	desc = map[string]string{}
	for _, p := range f.Schema().Columns() {
		c := f.Root().Column(p[0])
		for _, name := range p[1:] {
			c = c.Column(name)
		}
		k := strings.Join(p, ".")
		paths = append(paths, k)
		typ := c.Type().Kind().String()
		if lt := c.Type().LogicalType(); lt != nil && lt.String() == "STRING" {
			typ += " STRING"
		}
		desc[k] = typ + " def=" + jsonOf(c.MaxDefinitionLevel()) + " rep=" + jsonOf(c.MaxRepetitionLevel())
	}
	return paths, desc
}

func TestWriteCheckpointSparkLayout(t *testing.T) {
	const fixture = "delta-kernel-rs/golden-dv-partitioned-with-checkpoint"
	spark, err := os.ReadFile(filepath.Join(testenv.Fixture(t, fixture), "_delta_log", "00000000000000000010.checkpoint.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := dirStore{root: testenv.CopyFixture(t, fixture)}
	snap, err := Open(store, Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := checkpoint.Encode(&buf, snap.checkpointState()); err != nil {
		t.Fatal(err)
	}
	_, ours := cwLeaves(t, buf.Bytes())
	sparkPaths, sparkDesc := cwLeaves(t, spark)
	for _, p := range sparkPaths {
		if strings.Contains(p, "_parsed") {
			continue // optional typed copies (writeStatsAsStruct)
		}
		if ours[p] != sparkDesc[p] {
			t.Errorf("column %s: ours %q, Spark %q", p, ours[p], sparkDesc[p])
		}
	}
	for _, p := range []string{
		"add.clusteringProvider", "add.deletionVector.maxRowIndex", "add.tags.key_value.value",
		"metaData.format.options.key_value.key", "protocol.writerFeatures.list.element",
		"domainMetadata.removed", "txn.lastUpdated",
	} {
		if ours[p] == "" {
			t.Errorf("column %s missing", p)
		}
	}
	if _, ok := ours["checkpointMetadata.version"]; ok {
		t.Errorf("V1 checkpoint has a checkpointMetadata column")
	}
}

func TestWriteCheckpointKeepsNewerHint(t *testing.T) {
	ctx := context.Background()
	store := dirStore{root: testenv.CopyFixture(t, "delta-kernel-rs/golden-dv-partitioned-with-checkpoint")}
	tbl := Open(store, Options{})
	old, err := tbl.Snapshot(ctx, 12)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		snap *Snapshot
		want int64
	}{{latest, latest.Version()}, {old, latest.Version()}} {
		if err := WriteCheckpoint(ctx, store, step.snap); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Stat(ctx, CheckpointKey(step.snap.Version())); err != nil {
			t.Errorf("checkpoint %d not written: %v", step.snap.Version(), err)
		}
		lc, ok, err := readLastCheckpoint(ctx, store)
		if err != nil || !ok || lc.Version != step.want {
			t.Errorf("after checkpoint %d: hint %+v ok=%v err=%v, want version %d", step.snap.Version(), lc, ok, err, step.want)
		}
	}
	// The older checkpoint is complete too: version 12 rebuilds from it.
	cwTruncateLog(t, store.root, 12)
	got, err := Open(store, Options{}).Snapshot(ctx, 12)
	if err != nil {
		t.Fatal(err)
	}
	cwCompareSnapshots(t, old, got)
}

// BenchmarkEncodeCheckpoint encodes the checkpoint of a 100k-file snapshot
// (the replay benchmark's table) in memory, as WriteCheckpoint does.
func BenchmarkEncodeCheckpoint(b *testing.B) {
	checkpointed, _ := replayBenchTables(b)
	snap, err := Open(dirStore{checkpointed}, Options{}).Snapshot(context.Background(), -1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if _, err := checkpoint.Encode(&buf, snap.checkpointState()); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
	b.ReportMetric(float64(len(snap.Files())), "adds")
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
