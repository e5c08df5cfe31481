package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// dirStore is a minimal Storage over a local directory for the package's
// internal tests and benchmarks (which cannot import delta/blobstore).
type dirStore struct{ root string }

func (d dirStore) String() string         { return d.root }
func (d dirStore) path(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }
func (d dirStore) wrap(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", key, ErrNotExist)
	}
	return err
}

func (d dirStore) List(_ context.Context, dir, from string) ([]ObjectInfo, error) {
	ents, err := os.ReadDir(d.path(dir))
	if err != nil {
		return nil, d.wrap(dir, err)
	}
	var out []ObjectInfo
	for _, e := range ents {
		if e.IsDir() || e.Name() < from {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, ObjectInfo{Key: dir + e.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (d dirStore) ListDirs(_ context.Context, dir string) ([]string, error) {
	ents, err := os.ReadDir(d.path(dir))
	if err != nil {
		return nil, d.wrap(dir, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (d dirStore) Stat(_ context.Context, key string) (ObjectInfo, error) {
	fi, err := os.Stat(d.path(key))
	if err != nil {
		return ObjectInfo{}, d.wrap(key, err)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

func (d dirStore) ReadRange(_ context.Context, key string, off, length int64) (io.ReadCloser, error) {
	data, err := os.ReadFile(d.path(key))
	if err != nil {
		return nil, d.wrap(key, err)
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	data = data[off:]
	if length >= 0 && length < int64(len(data)) {
		data = data[:length]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (d dirStore) PutIfAbsent(_ context.Context, key string, data []byte) error {
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", key, ErrExists)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (d dirStore) Put(_ context.Context, key string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func (d dirStore) Delete(_ context.Context, key string) error {
	err := os.Remove(d.path(key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

var _ Storage = dirStore{}
