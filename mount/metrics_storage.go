package mount

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// timedStorage is a table's delta.Storage as the log engine and the
// inbox's committer see it: every request is timed (commits and lost
// races are counted by the committer's hooks, see committerHooks). Data
// files are read through the block cache, not through it.
type timedStorage struct {
	delta.Storage
	m *metrics
}

var (
	_ delta.Storage    = (*timedStorage)(nil)
	_ delta.KeyChecker = (*timedStorage)(nil)
	_ delta.LocalDirer = (*timedStorage)(nil)
)

// CheckKey forwards delta.KeyChecker.
func (s *timedStorage) CheckKey(key string) error { return delta.CheckKey(s.Storage, key) }

// LocalDir forwards delta.LocalDirer.
func (s *timedStorage) LocalDir() string { return delta.LocalDir(s.Storage) }

// instrumentTables reopens each table over a timed storage. It must run
// before any table is read: delta.Open does no I/O, and nothing is lost.
func instrumentTables(ts []*mountedTable, m *metrics, caches *delta.Caches) {
	for _, t := range ts {
		t.table = delta.Open(&timedStorage{Storage: t.store, m: m}, delta.Options{Caches: caches})
	}
}

func (s *timedStorage) List(ctx context.Context, dir, from string) ([]delta.ObjectInfo, error) {
	start := time.Now()
	out, err := s.Storage.List(ctx, dir, from)
	s.m.storageRequest("list", start, err)
	return out, err
}

// ListNames forwards delta.NameLister when the wrapped storage has it.
func (s *timedStorage) ListNames(ctx context.Context, dir, from string) ([]string, bool, error) {
	nl, ok := s.Storage.(delta.NameLister)
	if !ok {
		return nil, false, nil
	}
	start := time.Now()
	out, ok, err := nl.ListNames(ctx, dir, from)
	if ok {
		s.m.storageRequest("list", start, err)
	}
	return out, ok, err
}

var _ delta.NameLister = (*timedStorage)(nil)

// ListRange forwards delta.RangeLister, or lists from and cuts at to.
func (s *timedStorage) ListRange(ctx context.Context, dir, from, to string) ([]delta.ObjectInfo, error) {
	start := time.Now()
	var out []delta.ObjectInfo
	var err error
	if rl, ok := s.Storage.(delta.RangeLister); ok {
		out, err = rl.ListRange(ctx, dir, from, to)
	} else {
		out, err = s.Storage.List(ctx, dir, from)
		if to != "" {
			for i, o := range out {
				if strings.TrimPrefix(o.Key, dir) >= to {
					out = out[:i]
					break
				}
			}
		}
	}
	s.m.storageRequest("list", start, err)
	return out, err
}

var _ delta.RangeLister = (*timedStorage)(nil)

func (s *timedStorage) ListDirs(ctx context.Context, dir string) ([]string, error) {
	start := time.Now()
	out, err := s.Storage.ListDirs(ctx, dir)
	s.m.storageRequest("list_dirs", start, err)
	return out, err
}

func (s *timedStorage) Stat(ctx context.Context, key string) (delta.ObjectInfo, error) {
	start := time.Now()
	out, err := s.Storage.Stat(ctx, key)
	s.m.storageRequest("stat", start, err)
	return out, err
}

// ReadRange times the request until the object starts streaming.
func (s *timedStorage) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := s.Storage.ReadRange(ctx, key, off, length)
	s.m.storageRequest("read", start, err)
	return rc, err
}

func (s *timedStorage) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	start := time.Now()
	err := s.Storage.PutIfAbsent(ctx, key, data)
	s.m.storageRequest("put_if_absent", start, err)
	return err
}

func (s *timedStorage) Put(ctx context.Context, key string, r io.Reader) error {
	start := time.Now()
	err := s.Storage.Put(ctx, key, r)
	s.m.storageRequest("put", start, err)
	return err
}

func (s *timedStorage) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.Storage.Delete(ctx, key)
	s.m.storageRequest("delete", start, err)
	return err
}
