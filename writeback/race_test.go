package writeback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// 8 writers, each with its own Table and Committer (as separate processes
// would), race on put-if-absent: every file lands exactly once, in
// contiguous versions.
func TestConcurrentAppenders(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	base := latest(t, dir)
	const writers = 8
	var wg sync.WaitGroup
	versions := make([]int64, writers)
	errs := make([]error, writers)
	for i := range writers {
		src := writeParquet(t, fmt.Sprintf("w%d.parquet", i), []numberRow{{Number: ptr(int64(i))}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := New(openTable(t, dir), Options{EngineInfo: "deltafs/test"})
			res, err := c.Append(context.Background(), []File{{LocalPath: src, Name: fmt.Sprintf("w%d.parquet", i)}})
			versions[i], errs[i] = res.Version, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	sorted := append([]int64(nil), versions...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i, v := range sorted {
		if v != base.Version()+1+int64(i) {
			t.Fatalf("versions %v are not contiguous after %d", sorted, base.Version())
		}
	}
	after := latest(t, dir)
	if after.Version() != base.Version()+writers {
		t.Fatalf("latest %d, want %d", after.Version(), base.Version()+writers)
	}
	seen := map[string]int{}
	for v := base.Version() + 1; v <= after.Version(); v++ {
		var ci commitInfo
		json.Unmarshal(commitLines(t, dir, v)[0]["commitInfo"], &ci)
		for _, s := range ci.SourceFiles {
			seen[s]++
		}
	}
	for i := range writers {
		if n := seen[fmt.Sprintf("w%d.parquet", i)]; n != 1 {
			t.Errorf("w%d.parquet committed %d times", i, n)
		}
	}
	if got := totalRecords(t, after); got != totalRecords(t, base)+writers {
		t.Errorf("%d records, want %d", got, totalRecords(t, base)+writers)
	}
}

// faultStore injects failures into the commit puts of a real store.
type faultStore struct {
	*blobstore.Store
	mu  sync.Mutex
	put func(s *blobstore.Store, key string, data []byte) error // nil: pass through
}

func (f *faultStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	f.mu.Lock()
	put := f.put
	f.mu.Unlock()
	if put != nil {
		return put(f.Store, key, data)
	}
	return f.Store.PutIfAbsent(ctx, key, data)
}

func faultCommitter(t *testing.T, dir string, maxRetry time.Duration, put func(*blobstore.Store, string, []byte) error) *Committer {
	t.Helper()
	st, err := blobstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(delta.Open(&faultStore{Store: st, put: put}, delta.Options{}), Options{MaxRetry: maxRetry})
}

// A put that stores the commit but reports a failure must not produce a
// second version: the committer finds its txnId in the log.
func TestAmbiguousPutLandsOnce(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	base := latest(t, dir)
	c := faultCommitter(t, dir, time.Second, func(s *blobstore.Store, key string, data []byte) error {
		if err := s.PutIfAbsent(context.Background(), key, data); err != nil {
			return err
		}
		return errors.New("connection reset after upload")
	})
	src := writeParquet(t, "a.parquet", []numberRow{{Number: ptr[int64](1)}})
	res, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "a.parquet"}})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	after := latest(t, dir)
	if res.Version != base.Version()+1 || after.Version() != res.Version {
		t.Errorf("version %d, latest %d, want both %d", res.Version, after.Version(), base.Version()+1)
	}
}

// Losing every race until MaxRetry fails with ErrConflict and removes the
// uploaded data file; the table is unchanged.
func TestConflictGivesUp(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	before := listFiles(t, dir)
	c := faultCommitter(t, dir, 100*time.Millisecond, func(*blobstore.Store, string, []byte) error {
		return fmt.Errorf("put: %w", delta.ErrExists)
	})
	src := writeParquet(t, "a.parquet", []numberRow{{Number: ptr[int64](1)}})
	_, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "a.parquet"}})
	if !errors.Is(err, delta.ErrConflict) || !strings.Contains(err.Error(), "lost the race") {
		t.Fatalf("error %v, want ErrConflict", err)
	}
	if after := listFiles(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("failed append left files behind")
	}
}

// A storage failure that did not store the commit passes through and
// removes the data file.
func TestStorageErrorPassesThrough(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	before := listFiles(t, dir)
	boom := errors.New("disk on fire")
	c := faultCommitter(t, dir, time.Second, func(*blobstore.Store, string, []byte) error { return boom })
	src := writeParquet(t, "a.parquet", []numberRow{{Number: ptr[int64](1)}})
	_, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "a.parquet"}})
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalidFile) || errors.Is(err, delta.ErrConflict) {
		t.Fatalf("error %v, want the storage error", err)
	}
	if after := listFiles(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("failed append left files behind")
	}
}

// A winner that changes the metadata makes the committer re-validate: a
// file that no longer fits the new schema is refused.
func TestConflictWithMetadataChangeRevalidates(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	snap := latest(t, dir)
	md := *snap.Metadata()
	md.SchemaString = `{"type":"struct","fields":[{"name":"letter","type":"string","nullable":true,"metadata":{}}]}`
	winner, _ := json.Marshal(delta.Action{MetaData: &md})
	var once sync.Once
	c := faultCommitter(t, dir, time.Second, func(s *blobstore.Store, key string, data []byte) error {
		once.Do(func() { // a schema change lands first
			if err := s.PutIfAbsent(context.Background(), key, append(winner, '\n')); err != nil {
				t.Error(err)
			}
		})
		return s.PutIfAbsent(context.Background(), key, data)
	})
	src := writeParquet(t, "a.parquet", []numberRow{{Number: ptr[int64](1)}})
	_, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "a.parquet"}})
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "table changed at version") {
		t.Fatalf("error %v, want ErrInvalidFile after the schema change", err)
	}
	if v := latest(t, dir).Version(); v != snap.Version()+1 {
		t.Errorf("latest %d, want only the winner's %d", v, snap.Version()+1)
	}
}

// A local log whose next commit's name is a symbolic link (or anything
// but a regular file) is refused at once as a damaged log naming it; the
// append used to lose the "race" to it for MaxRetry (30 s by default). Nothing is left behind.
func TestCommitNameTakenByASymlink(t *testing.T) {
	for _, kind := range []string{"symlink", "directory"} {
		t.Run(kind, func(t *testing.T) {
			dir := testenv.CopyFixture(t, "dat/basic_append")
			next := filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", latest(t, dir).Version()+1))
			var err error
			if kind == "symlink" {
				err = os.Symlink("/etc/passwd", next)
			} else {
				err = os.Mkdir(next, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			before := listFiles(t, dir)
			conflicts := 0
			c := New(openTable(t, dir), Options{EngineInfo: "deltafs/test", MaxRetry: 10 * time.Second,
				OnConflict: func(int64) { conflicts++ }})
			t.Cleanup(c.Close)
			src := writeParquet(t, "a.parquet", []numberRow{{Number: ptr[int64](1)}})
			_, err = c.Append(context.Background(), []File{{LocalPath: src, Name: "a.parquet"}})
			if !errors.Is(err, delta.ErrCorruptLog) || !strings.Contains(err.Error(), kind) {
				t.Fatalf("append: %v, want ErrCorruptLog naming the %s", err, kind)
			}
			if conflicts != 0 {
				t.Errorf("%d lost races retried against the %s", conflicts, kind)
			}
			if after := listFiles(t, dir); !reflect.DeepEqual(before, after) {
				t.Errorf("refused append left files behind")
			}
		})
	}
}

// stallStore fails the first commit put with an unknown outcome and
// stalls the Stat that resolves it until release is closed.
type stallStore struct {
	*blobstore.Store
	once      sync.Once
	failed    chan string // the commit key whose put failed
	resolving chan struct{}
	release   chan struct{}
}

func (s *stallStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	first := false
	if strings.HasPrefix(key, "_delta_log/") {
		s.once.Do(func() { first = true })
	}
	if first {
		s.failed <- key
		return errors.New("connection reset before the answer")
	}
	return s.Store.PutIfAbsent(ctx, key, data)
}

func (s *stallStore) Stat(ctx context.Context, key string) (delta.ObjectInfo, error) {
	select {
	case k := <-s.failed:
		if k == key {
			close(s.resolving)
			<-s.release
		}
	default:
	}
	return s.Store.Stat(ctx, key)
}

// An append whose failed put takes long to resolve does not hold the
// table's other appends in this process: they commit meanwhile.
func TestSlowResolutionDoesNotStallOtherAppends(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	base := latest(t, dir)
	st, err := blobstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ss := &stallStore{Store: st, failed: make(chan string, 1), resolving: make(chan struct{}), release: make(chan struct{})}
	c := New(delta.Open(ss, delta.Options{}), Options{MaxRetry: 5 * time.Second})
	released := false
	defer func() {
		if !released {
			close(ss.release)
		}
	}()
	a := writeParquet(t, "a.parquet", []numberRow{{Number: ptr[int64](1)}})
	b := writeParquet(t, "b.parquet", []numberRow{{Number: ptr[int64](2)}})
	aDone := make(chan error, 1)
	go func() {
		_, err := c.Append(context.Background(), []File{{LocalPath: a, Name: "a.parquet"}})
		aDone <- err
	}()
	<-ss.resolving
	bDone := make(chan Result, 1)
	go func() {
		res, err := c.Append(context.Background(), []File{{LocalPath: b, Name: "b.parquet"}})
		if err != nil {
			t.Errorf("the second append: %v", err)
		}
		bDone <- res
	}()
	select {
	case res := <-bDone:
		if res.Version != base.Version()+1 {
			t.Errorf("the second append landed at %d, want %d", res.Version, base.Version()+1)
		}
	case <-time.After(30 * time.Second): // a second append stalled behind the first: no speed check
		t.Fatal("the second append waited for the first one's resolution")
	}
	close(ss.release)
	released = true
	// The first append then finds the version it tried taken by the
	// second and lands after it.
	if err := <-aDone; err != nil {
		t.Errorf("the first append: %v", err)
	}
	if after := latest(t, dir); after.Version() != base.Version()+2 {
		t.Errorf("latest %d, want %d", after.Version(), base.Version()+2)
	}
}
