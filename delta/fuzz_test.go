package delta

// Fuzz targets of the engine's parsers of untrusted bytes: commit lines
// and their replay, Parquet checkpoints, _last_checkpoint, deletion vector
// descriptors and files, Z85. `make fuzz` runs each for FUZZTIME; seeds
// come from the shared fixtures (read in place) and crashers are kept
// under testdata/fuzz/<Target>/ as regression inputs.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/delta/checkpoint"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// memStore is a read-only Storage over a map of keys to bytes.
type memStore map[string][]byte

func (m memStore) String() string { return "mem" }

func (m memStore) List(_ context.Context, dir, from string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	for k, v := range m {
		name, ok := strings.CutPrefix(k, dir)
		if ok && !strings.Contains(name, "/") && name >= from {
			out = append(out, ObjectInfo{Key: k, Size: int64(len(v)), ModTime: time.Unix(1e9, 0)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m memStore) ListDirs(_ context.Context, dir string) ([]string, error) {
	seen := map[string]bool{}
	for k := range m {
		if name, ok := strings.CutPrefix(k, dir); ok {
			if d, _, sub := strings.Cut(name, "/"); sub {
				seen[d] = true
			}
		}
	}
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out, nil
}

func (m memStore) Stat(_ context.Context, key string) (ObjectInfo, error) {
	v, ok := m[key]
	if !ok {
		return ObjectInfo{}, ErrNotExist
	}
	return ObjectInfo{Key: key, Size: int64(len(v)), ModTime: time.Unix(1e9, 0)}, nil
}

func (m memStore) ReadRange(_ context.Context, key string, off, length int64) (io.ReadCloser, error) {
	v, ok := m[key]
	if !ok {
		return nil, ErrNotExist
	}
	off = min(max(off, 0), int64(len(v)))
	v = v[off:]
	if length >= 0 && length < int64(len(v)) {
		v = v[:length]
	}
	return io.NopCloser(bytes.NewReader(v)), nil
}

func (m memStore) PutIfAbsent(context.Context, string, []byte) error { return errors.ErrUnsupported }
func (m memStore) Put(context.Context, string, io.Reader) error      { return errors.ErrUnsupported }
func (m memStore) Delete(context.Context, string) error              { return errors.ErrUnsupported }

// fuzzSeedFiles returns up to limit files of the fixtures whose path matches
// match, smallest first (small seeds mutate faster), or none (with a log
// line) when the fixtures are missing: fuzzing then starts from the
// hand-written seeds only.
func fuzzSeedFiles(f *testing.F, match func(path string, size int64) bool, limit int) [][]byte {
	f.Helper()
	root := os.Getenv(testenv.EnvFixtures)
	if root == "" {
		root = filepath.Join(testenv.RepoRoot(f), "..", "shared", "fixtures", "delta")
	}
	type file struct {
		path string
		size int64
	}
	var files []file
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && match(p, fi.Size()) {
			files = append(files, file{p, fi.Size()})
		}
		return nil
	})
	if len(files) == 0 {
		f.Logf("no fixture seeds under %s: fuzzing from the built-in seeds", root)
	}
	sort.Slice(files, func(i, j int) bool {
		return files[i].size < files[j].size || files[i].size == files[j].size && files[i].path < files[j].path
	})
	// Spread the picks over the size range rather than only the smallest.
	var out [][]byte
	step := max(1, len(files)/limit)
	for i := 0; i < len(files) && len(out) < limit; i += step {
		if b, err := os.ReadFile(files[i].path); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// inLog matches files of a _delta_log/ with the given suffix.
func inLog(suffix string, maxSize int64) func(string, int64) bool {
	return func(p string, size int64) bool {
		return filepath.Base(filepath.Dir(p)) == "_delta_log" && strings.HasSuffix(p, suffix) && size <= maxSize
	}
}

// logSentinels are the errors a log read may end with.
var logSentinels = []error{ErrCorruptLog, ErrUnsupportedFeature, ErrVersionNotFound, ErrNotATable, ErrCorruptDeletionVector, ErrInvalidPartitionPath}

func wrapsOneOf(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// FuzzParseActions parses arbitrary bytes as a commit: no panic, errors
// wrap ErrCorruptLog, and every action decoded has exactly one field set.
func FuzzParseActions(f *testing.F) {
	for _, b := range fuzzSeedFiles(f, inLog(".json", 64<<10), 200) {
		f.Add(b)
	}
	f.Add([]byte(`{"add":{"path":"a","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}` + "\n{}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := action.Parse(data, func(a *Action) error { return nil })
		if err != nil && !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("error %v does not wrap ErrCorruptLog", err)
		}
	})
}

// FuzzReplay replays a fuzzed commit 1 on top of a fuzzed commit 0 (seeds:
// consecutive commits of the fixtures). Building must not panic, errors
// must wrap a sentinel, and a snapshot built must be coherent: one live
// entry per (path, DV), keys that stay inside the table root, and DVs that
// load or fail with ErrCorruptDeletionVector.
func FuzzReplay(f *testing.F) {
	commits := fuzzSeedFiles(f, inLog("00000000000000000000.json", 32<<10), 60)
	for _, c0 := range commits {
		f.Add(c0, []byte(`{"commitInfo":{}}`))
	}
	f.Add([]byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"p\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":["p"],"configuration":{}}}
{"add":{"path":"p=1/a.parquet","partitionValues":{"p":"1"},"size":10,"modificationTime":1,"dataChange":true}}`),
		[]byte(`{"remove":{"path":"p=1/a.parquet","dataChange":true}}
{"add":{"path":"../b.parquet","partitionValues":{"p":null},"size":10,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}}}`))
	f.Fuzz(func(t *testing.T, c0, c1 []byte) {
		store := memStore{CommitKey(0): c0, CommitKey(1): c1}
		snap, err := Open(store, Options{}).Latest(context.Background())
		if err != nil {
			if !wrapsOneOf(err, logSentinels...) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		checkSnapshot(t, snap)
	})
}

// checkSnapshot asserts the invariants of a built snapshot.
func checkSnapshot(t *testing.T, snap *Snapshot) {
	t.Helper()
	seen := map[string]bool{}
	for _, a := range snap.Files() {
		k := a.Path + "\x00" + a.DeletionVector.UniqueID()
		if seen[k] {
			t.Fatalf("file %q listed twice", k)
		}
		seen[k] = true
		if _, err := snap.DeletedRows(context.Background(), a); err != nil && !wrapsOneOf(err, ErrCorruptDeletionVector, ErrNotExist, ErrUnsupportedFeature, ErrCorruptLog) {
			t.Fatalf("deleted rows of %s: unexpected error %v", a.Path, err)
		}
	}
	files, err := snap.LiveFiles()
	if err != nil {
		return
	}
	for _, lf := range files {
		if lf.Key == "" || strings.ContainsRune(lf.Key, 0) || strings.HasPrefix(lf.Key, "/") || strings.Contains("/"+lf.Key+"/", "/../") || strings.Contains("/"+lf.Key+"/", "/./") {
			t.Fatalf("add path %q resolves to key %q outside the table root", lf.Add.Path, lf.Key)
		}
	}
}

// FuzzReadParquetActions reads arbitrary bytes as a Parquet checkpoint: no
// panic, and an error whenever the bytes are not a checkpoint.
func FuzzReadParquetActions(f *testing.F) {
	for _, b := range fuzzSeedFiles(f, inLog(".parquet", 24<<10), 40) {
		f.Add(b)
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := checkpoint.ReadActions(bytes.NewReader(data), int64(len(data)), func(a *Action) error {
			n++
			return nil
		})
		if err == nil && len(data) < 12 {
			t.Fatalf("%d bytes read as a checkpoint of %d actions", len(data), n)
		}
	})
}

// FuzzLastCheckpoint reads arbitrary bytes as _last_checkpoint: no panic;
// a hint accepted with a checksum matches the canonical MD5, and a hint is
// never accepted with a negative version.
func FuzzLastCheckpoint(f *testing.F) {
	for _, b := range fuzzSeedFiles(f, func(p string, _ int64) bool { return filepath.Base(p) == "_last_checkpoint" }, 60) {
		f.Add(b)
	}
	f.Add([]byte(`{"version":10,"size":13,"checksum":"0"}`))
	f.Add([]byte(`{"version":1,"size":2,"tags":{"a b":"c\u00e9"},"v2Checkpoint":{"path":"x","sizeInBytes":1,"modificationTime":2}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lc, ok, err := readLastCheckpoint(context.Background(), memStore{LastCheckpointKey: data})
		if err != nil {
			t.Fatalf("a readable hint gave error %v (want ok=false instead)", err)
		}
		if !ok {
			return
		}
		if lc.Version < 0 {
			t.Fatalf("accepted negative version %d", lc.Version)
		}
		if lc.Checksum != "" {
			if sum, err := lastCheckpointChecksum(data); err != nil || sum != lc.Checksum {
				t.Fatalf("accepted checksum %q, canonical %q (%v)", lc.Checksum, sum, err)
			}
		}
	})
}
