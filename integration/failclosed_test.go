package integration

// Fail closed: damage a copy of a fixture (a corrupt deletion vector, a
// torn or garbage commit, a checkpoint missing a part, a data file sized
// unlike the log) and check, through the engine and through a mount, that
// every version either reads exactly like the undamaged copy or fails
// with an error naming the damaged file; versions older than the damage
// must read.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// damageCase damages a table copy. damage returns the damaged file (as a
// key relative to the table root, which errors must name) and the first
// version that may depend on it.
type damageCase struct {
	name    string
	fixture string
	damage  func(t *testing.T, root string) (key string, firstBad int64)
}

func damageCases() []damageCase {
	return []damageCase{
		{"corrupt DV", fixtureDV, corruptFirstDV},
		{"torn last commit", "dat/multi_partitioned", func(t *testing.T, root string) (string, int64) {
			key, v := lastCommit(t, root)
			data := readFile(t, root, key)
			writeFile(t, root, key, data[:len(data)/2])
			return key, v
		}},
		{"garbage commit", fixtureDV, func(t *testing.T, root string) (string, int64) {
			key := delta.CommitKey(3)
			writeFile(t, root, key, []byte("\x00\x01garbage{\"add\":\n"))
			return key, 3
		}},
		{"checkpoint missing a part, commits gone", "delta-kernel-rs/golden-multi-part-checkpoint", func(t *testing.T, root string) (string, int64) {
			key := "_delta_log/00000000000000000001.checkpoint.0000000002.0000000002.parquet"
			removeFile(t, root, key)
			removeFile(t, root, delta.CommitKey(0))
			removeFile(t, root, delta.CommitKey(1))
			return "00000000000000000001.checkpoint.0000000001.0000000002.parquet", 0
		}},
		{"checkpoint missing a part, commits kept", "delta-kernel-rs/golden-multi-part-checkpoint", func(t *testing.T, root string) (string, int64) {
			key := "_delta_log/00000000000000000001.checkpoint.0000000002.0000000002.parquet"
			removeFile(t, root, key)
			return key, 1
		}},
		{"data file shorter than the log says", "dat/basic_append", func(t *testing.T, root string) (string, int64) {
			key, v := lastAddedFile(t, root)
			data := readFile(t, root, key)
			writeFile(t, root, key, data[:len(data)-10])
			return key, v
		}},
		{"data file longer than the log says", "dat/multi_partitioned", func(t *testing.T, root string) (string, int64) {
			key, v := lastAddedFile(t, root)
			writeFile(t, root, key, append(readFile(t, root, key), "junk"...))
			return key, v
		}},
	}
}

func TestFailClosed(t *testing.T) {
	for _, c := range damageCases() {
		t.Run(c.name, func(t *testing.T) {
			clean := testenv.CopyFixture(t, c.fixture)
			damaged := testenv.CopyFixture(t, c.fixture)
			key, firstBad := c.damage(t, damaged)
			name := filepath.Base(key)
			latest := engineFailClosed(t, clean, damaged, name, firstBad)
			mountFailClosed(t, clean, damaged, name, firstBad, latest)
		})
	}
}

// engineFailClosed checks every version through the engine and returns
// the clean copy's latest version.
func engineFailClosed(t *testing.T, clean, damaged, name string, firstBad int64) int64 {
	ctx := context.Background()
	cleanT, damagedT := openEngine(t, clean), openEngine(t, damaged)
	ref, err := cleanT.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	for v := int64(0); v <= ref.Version(); v++ {
		want, err := cleanT.Snapshot(ctx, v)
		if err != nil {
			continue // not reconstructable in the fixture itself
		}
		got, err := damagedT.Snapshot(ctx, v)
		if err == nil {
			err = sameSnapshot(ctx, got, want)
		}
		switch {
		case err == nil:
		case v < firstBad:
			t.Errorf("v%d predates the damage but fails: %v", v, err)
		case errors.Is(err, delta.ErrVersionNotFound) && latestNames(ctx, damagedT, name):
			failures++ // nothing left to build it from; @latest's error names the damage
		case !strings.Contains(err.Error(), name):
			t.Errorf("v%d: error does not name %s: %v", v, name, err)
		default:
			failures++
		}
	}
	t.Logf("engine: %d of %d versions refused, each naming %s", failures, ref.Version()+1, name)
	return ref.Version()
}

// latestNames reports whether the table's latest version fails with an
// error naming name.
func latestNames(ctx context.Context, table *delta.Table, name string) bool {
	_, err := table.Latest(ctx)
	return err != nil && strings.Contains(err.Error(), name)
}

func openEngine(t *testing.T, root string) *delta.Table {
	st, err := blobstore.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return delta.Open(st, delta.Options{})
}

// sameSnapshot reports how got differs from want (files, DVs), or nil. A
// DV that fails to load is returned as is (it must name its file).
func sameSnapshot(ctx context.Context, got, want *delta.Snapshot) error {
	g, w := liveSet(got), liveSet(want)
	if !slices.Equal(g, w) {
		return fmt.Errorf("v%d serves other files than the undamaged copy:\n got %q\nwant %q", got.Version(), g, w)
	}
	for _, a := range got.Files() {
		bm, err := got.DeletedRows(ctx, a)
		if err != nil {
			return err
		}
		wbm, err := want.DeletedRows(ctx, a)
		if err != nil || !bm.Equals(wbm) {
			return fmt.Errorf("v%d %s: other deleted rows than the undamaged copy (%v)", got.Version(), a.Path, err)
		}
	}
	return nil
}

func liveSet(s *delta.Snapshot) []string {
	var out []string
	for _, a := range s.Files() {
		out = append(out, fmt.Sprintf("%s %d %s", a.Path, a.Size, a.DeletionVector.UniqueID()))
	}
	slices.Sort(out)
	return out
}

// mountFailClosed mounts both copies and reads every file of every @vN:
// each read of the damaged mount returns the clean mount's bytes or fails;
// versions before firstBad read fully; failures are logged naming name.
func mountFailClosed(t *testing.T, clean, damaged, name string, firstBad, latest int64) {
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), nil))
	cleanMnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: clean}}, ReadOnly: true})
	damagedMnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: damaged}}, ReadOnly: true, Logger: logger})
	failed := 0
	for v := int64(0); v <= latest; v++ {
		dir := fmt.Sprintf("t/@v%d", v)
		want, err := readTree(filepath.Join(cleanMnt, dir))
		if err != nil {
			continue // the fixture itself cannot serve it
		}
		got, err := readTree(filepath.Join(damagedMnt, dir))
		if err != nil {
			if v < firstBad {
				t.Errorf("mount: @v%d predates the damage but fails: %v", v, err)
			}
			failed++
			continue
		}
		for rel, data := range got {
			if data.err == nil && !bytes.Equal(data.bytes, want[rel].bytes) {
				t.Errorf("mount: @v%d/%s serves bytes that differ from the undamaged copy", v, rel)
			}
			if data.err != nil {
				failed++
				if v < firstBad {
					t.Errorf("mount: @v%d/%s predates the damage but fails: %v", v, rel, data.err)
				}
			}
		}
		if len(got) != len(want) {
			t.Errorf("mount: @v%d lists %d files, the undamaged copy %d", v, len(got), len(want))
		}
	}
	if failed > 0 && !strings.Contains(logs.String(), name) {
		t.Errorf("mount: %d reads failed but no log line names %s", failed, name)
	}
	t.Logf("mount: %d failed reads or listings", failed)
}

type fileRead struct {
	bytes []byte
	err   error
}

// readTree reads every regular file under dir; a listing error fails it,
// a file error is recorded per file.
func readTree(dir string) (map[string]fileRead, error) {
	out := map[string]fileRead{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			out[rel] = fileRead{b, err}
		}
		return nil
	})
	return out, err
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// corruptFirstDV flips bytes in the first deletion vector file the log
// references and returns it with the version that added it.
func corruptFirstDV(t *testing.T, root string) (string, int64) {
	ctx := context.Background()
	table := openEngine(t, root)
	latest, err := table.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v <= latest.Version(); v++ {
		snap, err := table.Snapshot(ctx, v)
		if err != nil {
			continue
		}
		for _, a := range snap.Files() {
			if a.DeletionVector == nil || a.DeletionVector.StorageType != "u" {
				continue
			}
			key, err := delta.DVRelativeKey(a.DeletionVector)
			if err != nil {
				t.Fatal(err)
			}
			data := readFile(t, root, key)
			for i := 12; i < len(data)-4; i += 3 {
				data[i] ^= 0x5a
			}
			writeFile(t, root, key, data)
			return key, v
		}
	}
	t.Fatal("no deletion vector file in the fixture")
	return "", 0
}

// lastCommit returns the newest commit's key and version.
func lastCommit(t *testing.T, root string) (string, int64) {
	snap := latestSnapshot(t, root)
	return delta.CommitKey(snap.Version()), snap.Version()
}

// lastAddedFile returns the storage key of a live file without a DV added
// by the newest version that added one, and that version.
func lastAddedFile(t *testing.T, root string) (string, int64) {
	ctx := context.Background()
	table := openEngine(t, root)
	latest, err := table.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for v := latest.Version(); v > 0; v-- {
		prev, err1 := table.Snapshot(ctx, v-1)
		snap, err2 := table.Snapshot(ctx, v)
		if err1 != nil || err2 != nil {
			continue
		}
		old := map[string]bool{}
		for _, a := range prev.Files() {
			old[a.Path] = true
		}
		for _, a := range latest.Files() {
			if !old[a.Path] && a.DeletionVector == nil && slices.ContainsFunc(snap.Files(), func(b *delta.Add) bool { return b.Path == a.Path }) {
				key, err := latest.DataKey(a)
				if err != nil {
					t.Fatal(err)
				}
				return key, v
			}
		}
	}
	t.Fatal("no added file without a DV")
	return "", 0
}

func readFile(t *testing.T, root, key string) []byte {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, root, key string, data []byte) {
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(key)), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeFile(t *testing.T, root, key string) {
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(key))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}
