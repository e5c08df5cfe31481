package sample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deltafs/deltafs/delta"
)

// dirStore is a delta.Storage over a local directory. The delta layer may
// not reach gocloud (delta/blobstore), so the generator carries this small
// one. PutIfAbsent links a temp file into place: link(2) fails atomically
// when the target exists.
type dirStore struct{ root string }

var _ delta.Storage = dirStore{}

func (d dirStore) String() string { return d.root }

func (d dirStore) path(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }

// wrap converts a missing file to delta.ErrNotExist.
func (d dirStore) wrap(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", op, key, delta.ErrNotExist)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

func (d dirStore) List(_ context.Context, dir, from string) ([]delta.ObjectInfo, error) {
	ents, err := os.ReadDir(d.path(dir))
	if err != nil {
		return nil, d.wrap("list", dir, err)
	}
	var out []delta.ObjectInfo
	for _, e := range ents {
		if e.IsDir() || e.Name() < from || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			out = append(out, delta.ObjectInfo{Key: dir + e.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (d dirStore) ListDirs(_ context.Context, dir string) ([]string, error) {
	ents, err := os.ReadDir(d.path(dir))
	if err != nil {
		return nil, d.wrap("list", dir, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (d dirStore) Stat(_ context.Context, key string) (delta.ObjectInfo, error) {
	fi, err := os.Stat(d.path(key))
	if err != nil {
		return delta.ObjectInfo{}, d.wrap("stat", key, err)
	}
	return delta.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

func (d dirStore) ReadRange(_ context.Context, key string, off, length int64) (io.ReadCloser, error) {
	f, err := os.Open(d.path(key))
	if err != nil {
		return nil, d.wrap("read", key, err)
	}
	if length < 0 {
		length = 1<<63 - 1
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, length), f}, nil
}

func (d dirStore) PutIfAbsent(_ context.Context, key string, data []byte) error {
	tmp, err := d.writeTemp(key, data)
	if err != nil {
		return d.wrap("put-if-absent", key, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, d.path(key)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("put-if-absent %s: %w", key, delta.ErrExists)
		}
		return d.wrap("put-if-absent", key, err)
	}
	return nil
}

func (d dirStore) Put(_ context.Context, key string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	tmp, err := d.writeTemp(key, data)
	if err != nil {
		return d.wrap("put", key, err)
	}
	if err := os.Rename(tmp, d.path(key)); err != nil {
		os.Remove(tmp)
		return d.wrap("put", key, err)
	}
	return nil
}

// writeTemp writes data to a hidden temp file beside key and syncs it.
func (d dirStore) writeTemp(key string, data []byte) (string, error) {
	final := d.path(key)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(final), "."+filepath.Base(final)+".*.tmp")
	if err != nil {
		return "", err
	}
	err = f.Chmod(0o644)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (d dirStore) Delete(_ context.Context, key string) error {
	if err := os.Remove(d.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return d.wrap("delete", key, err)
	}
	return nil
}
