package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/parquet-go/parquet-go"
)

// sinkStore is a Storage for checkpoint writing: a checkpoint's body is
// handed to onCheckpoint (default: counted and dropped), every other key
// is kept in memory.
type sinkStore struct {
	dirStore
	onCheckpoint func(r io.Reader) (int64, error)
	mu           sync.Mutex
	objs         map[string][]byte // guarded by mu
	cpBytes      int64             // guarded by mu: bytes of the last checkpoint body
}

func newSinkStore(t testing.TB) *sinkStore {
	return &sinkStore{dirStore: dirStore{t.TempDir()}, objs: map[string][]byte{}}
}

func (s *sinkStore) Put(_ context.Context, key string, r io.Reader) error {
	if strings.HasSuffix(key, ".checkpoint.parquet") {
		read := s.onCheckpoint
		if read == nil {
			read = func(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) }
		}
		n, err := read(r)
		s.mu.Lock()
		s.cpBytes = n
		s.mu.Unlock()
		return err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.objs[key] = data
	s.mu.Unlock()
	return nil
}

func (s *sinkStore) ReadRange(_ context.Context, key string, off, length int64) (io.ReadCloser, error) {
	s.mu.Lock()
	data, ok := s.objs[key]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, ErrNotExist)
	}
	data = data[min(off, int64(len(data))):]
	if length >= 0 {
		data = data[:min(length, int64(len(data)))]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// syntheticSnapshot is a snapshot of n live files of a table partitioned
// by date, each with ~150 bytes of JSON stats (the shape of
// BenchmarkReadParquetActions' checkpoint), built in memory.
func syntheticSnapshot(n int) *Snapshot {
	st := newTableState()
	st.protocol = &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	st.metadata = &Metadata{
		ID: "5756e7b1-4b09-4c4e-a3b8-da3c214613d0", Format: Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"date","type":"string","nullable":true,"metadata":{}}]}`,
		PartitionColumns: []string{"date"}, Configuration: map[string]string{},
	}
	parts := make([]map[string]*string, 60)
	for i := range parts {
		d := fmt.Sprintf("2024-%02d-%02d", 1+i/28, 1+i%28)
		parts[i] = map[string]*string{"date": &d}
	}
	st.files = make([]*Add, n)
	for i := range n {
		pv := parts[i%len(parts)]
		st.files[i] = &Add{
			Path:            fmt.Sprintf("date=%s/part-%05d-%08x-4c4e-a3b8-da3c214613d0.c000.snappy.parquet", *pv["date"], i%200, i),
			PartitionValues: pv, Size: int64(1<<20 + i), ModificationTime: int64(1_700_000_000_000 + i),
			Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"a%07d"},"maxValues":{"id":%d,"name":"z%07d"},"nullCount":{"id":0,"name":%d}}`,
				1000+i%977, i*1000, i%9_999_991, i*1000+999, (i*7)%9_999_991, i%100),
		}
	}
	return &Snapshot{version: int64(n), state: st, files: st.files}
}

// liveHeap is the heap in use after a collection (live objects only).
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// totalAlloc is the bytes allocated by the process so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestWriteCheckpointStreams checks that a checkpoint is streamed to
// storage while it is encoded, in row groups of a bounded number of rows:
// the file reads back whole, and a store that stops reading after the
// first bytes stops the encoder there (it allocates a fraction of what the
// whole file costs), where encoding the whole file into memory before the
// Put allocated it all whatever the store did.
func TestWriteCheckpointStreams(t *testing.T) {
	defer func(n int64) { checkpoint.RowGroupRows = n }(checkpoint.RowGroupRows)
	checkpoint.RowGroupRows = 2048
	const files = 40_000
	snap := syntheticSnapshot(files)
	ctx := context.Background()

	store := newSinkStore(t)
	var body bytes.Buffer
	store.onCheckpoint = func(r io.Reader) (int64, error) { return body.ReadFrom(r) }
	a0 := totalAlloc()
	if err := WriteCheckpoint(ctx, store, snap); err != nil {
		t.Fatal(err)
	}
	whole := totalAlloc() - a0
	rows := int64(0)
	err := checkpoint.ReadActions(bytes.NewReader(body.Bytes()), int64(body.Len()), func(a *Action) error {
		rows++
		return nil
	})
	if err != nil {
		t.Fatalf("read the streamed checkpoint back: %v", err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(body.Bytes()), int64(body.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if groups := len(f.RowGroups()); rows != files+2 || groups < files/2048 {
		t.Errorf("streamed checkpoint: %d actions in %d row groups, want %d in at least %d", rows, groups, files+2, files/2048)
	}
	lc, ok, err := readLastCheckpoint(ctx, store)
	if err != nil || !ok || lc.SizeInBytes == nil || *lc.SizeInBytes != int64(body.Len()) || lc.Size != files+2 {
		t.Errorf("_last_checkpoint after a streamed checkpoint: %+v (ok %v, err %v), want %d bytes and %d actions", lc, ok, err, body.Len(), files+2)
	}

	failing := newSinkStore(t)
	failing.onCheckpoint = func(r io.Reader) (int64, error) {
		n, _ := io.CopyN(io.Discard, r, 4)
		return n, fmt.Errorf("store gave up after %d bytes", n)
	}
	before := runtime.NumGoroutine()
	a0 = totalAlloc()
	err = WriteCheckpoint(ctx, failing, snap)
	part := totalAlloc() - a0
	t.Logf("checkpoint of %d files, %d bytes: %d bytes allocated; %d when the store stops after 4 bytes", files, body.Len(), whole, part)
	if err == nil || !strings.Contains(err.Error(), "store gave up") || !strings.Contains(err.Error(), fmt.Sprintf("checkpoint %d", files)) {
		t.Fatalf("checkpoint with a store that stops reading: %v", err)
	}
	if part > whole/4 {
		t.Errorf("a store that read 4 bytes of the checkpoint cost %d bytes of allocations, the whole file %d: it is encoded before it is stored, not streamed", part, whole)
	}
	if _, ok, _ := readLastCheckpoint(ctx, failing); ok {
		t.Error("_last_checkpoint written after the checkpoint failed")
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond) // the encoder reports before it returns
	}
	if n > before {
		t.Errorf("%d goroutines after the failed checkpoint, %d before: the encoder is left running", n, before)
	}
}

// TestWriteCheckpointShortPut checks that a Put that returns nil without
// reading the whole body (a broken store) fails the checkpoint instead of
// pointing _last_checkpoint at a truncated file.
func TestWriteCheckpointShortPut(t *testing.T) {
	store := newSinkStore(t)
	store.onCheckpoint = func(r io.Reader) (int64, error) { return io.CopyN(io.Discard, r, 100) }
	err := WriteCheckpoint(context.Background(), store, syntheticSnapshot(5000))
	if !errors.Is(err, errPutStopped) {
		t.Fatalf("checkpoint whose Put read 100 bytes and returned nil: %v, want errPutStopped", err)
	}
	if _, ok, _ := readLastCheckpoint(context.Background(), store); ok {
		t.Error("_last_checkpoint written for a truncated checkpoint")
	}
}

// BenchmarkWriteCheckpointMillion writes the checkpoint of a 1,000,000-file
// snapshot to a store that discards it, reporting the peak heap above
// the snapshot itself (sampled, garbage included) and the live heap's
// peak growth while the body is stored (sampled after collections).
func BenchmarkWriteCheckpointMillion(b *testing.B) {
	snap := syntheticSnapshot(1_000_000)
	store := newSinkStore(b)
	var livePeak uint64
	store.onCheckpoint = func(r io.Reader) (int64, error) {
		buf := make([]byte, 1<<20)
		total, next := int64(0), int64(0)
		for {
			n, err := r.Read(buf)
			total += int64(n)
			if total >= next {
				livePeak = max(livePeak, liveHeap())
				next += 16 << 20
			}
			if err == io.EOF {
				return total, nil
			}
			if err != nil {
				return total, err
			}
		}
	}
	base := liveHeap()
	b.ReportAllocs()
	peak := testenv.StartHeapPeak()
	for b.Loop() {
		if err := WriteCheckpoint(context.Background(), store, snap); err != nil {
			b.Fatal(err)
		}
	}
	peak.Report(b)
	b.ReportMetric(float64(peak.Max()-min(peak.Max(), base))/(1<<20), "above-snapshot-MiB")
	b.ReportMetric(float64(livePeak-min(livePeak, base))/(1<<20), "live-growth-MiB")
	b.ReportMetric(float64(store.cpBytes)/(1<<20), "checkpoint-MiB")
	b.ReportMetric(float64(base)/(1<<20), "snapshot-MiB")
}
