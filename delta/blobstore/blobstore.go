// Package blobstore adapts a gocloud.dev/blob bucket to delta.Storage.
//
// It is the one place where gocloud error codes become the engine's
// sentinels (delta.ErrNotExist, delta.ErrExists). Tables on the local
// filesystem commit with a temp file and link(2), because fileblob's
// IfNotExist is not atomic across writers.
package blobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob" // mem:// URLs
	"gocloud.dev/gcerrors"

	"github.com/deltafs/deltafs/delta"
)

// Store is a delta.Storage over a gocloud bucket, rooted at a prefix.
type Store struct {
	bucket  *blob.Bucket
	prefix  string // key prefix of the table root within the bucket, "" or ending in '/'
	display string // URL without credentials, for messages
	local   string // filesystem directory of the root when the bucket is fileblob
}

var _ delta.Storage = (*Store)(nil)

// Open opens the table (or warehouse) root named by location: a local path,
// a file:// URL or any gocloud blob URL whose path part is the prefix of the
// root inside the bucket (for example s3://bucket/warehouse/orders?region=x).
func Open(ctx context.Context, location string) (*Store, error) {
	u, err := parseLocation(location)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "file" {
		return openLocal(u.Path)
	}
	prefix := strings.Trim(u.Path, "/")
	bu := *u
	bu.Path = ""
	b, err := blob.OpenBucket(ctx, bu.String())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", Redact(location), err)
	}
	return New(b, prefix, Redact(location)), nil
}

// New wraps an open bucket; prefix is the table root within it.
func New(b *blob.Bucket, prefix, display string) *Store {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Store{bucket: b, prefix: prefix, display: display}
}

func openLocal(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open %s: not a directory", abs)
	}
	b, err := fileblob.OpenBucket(abs, &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	s := New(b, "", abs)
	s.local = abs
	return s, nil
}

// parseLocation turns a plain path into a file URL and checks the scheme.
func parseLocation(location string) (*url.URL, error) {
	if !strings.Contains(location, "://") {
		return &url.URL{Scheme: "file", Path: location}, nil
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("bad table URL %q: %v", Redact(location), err)
	}
	if u.Scheme == "file" && u.Path == "" {
		u.Path = u.Host
	}
	return u, nil
}

// Redact removes credentials (user info and secret-looking query
// parameters) from a URL so it can be logged.
func Redact(location string) string {
	u, err := url.Parse(location)
	if err != nil || !strings.Contains(location, "://") {
		return location
	}
	u.User = nil
	q := u.Query()
	for k := range q {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "secret") || strings.Contains(lk, "key") || strings.Contains(lk, "token") ||
			strings.Contains(lk, "sig") || strings.Contains(lk, "password") || strings.Contains(lk, "credential") {
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Bucket returns the underlying bucket and the root prefix within it.
func (s *Store) Bucket() (*blob.Bucket, string) { return s.bucket, s.prefix }

// LocalDir returns the local directory of the root, or "" for remote stores.
func (s *Store) LocalDir() string { return s.local }

// Sub returns a Store rooted at dir (a child of this root).
func (s *Store) Sub(dir string) *Store {
	c := *s
	c.prefix = s.prefix + strings.Trim(dir, "/") + "/"
	c.display = strings.TrimSuffix(s.display, "/") + "/" + strings.Trim(dir, "/")
	if s.local != "" {
		c.local = filepath.Join(s.local, filepath.FromSlash(dir))
	}
	return &c
}

// Close closes the bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// String implements delta.Storage.
func (s *Store) String() string { return s.display }

// List implements delta.Storage.
func (s *Store) List(ctx context.Context, dir, from string) ([]delta.ObjectInfo, error) {
	if s.local != "" {
		return s.listLocal(dir, from)
	}
	full := s.prefix + dir
	opts := &blob.ListOptions{Prefix: full, Delimiter: "/", BeforeList: startAfter(full + from)}
	it := s.bucket.List(opts)
	var out []delta.ObjectInfo
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.wrap("list", dir, err)
		}
		if obj.IsDir {
			continue
		}
		name := strings.TrimPrefix(obj.Key, full)
		if name < from {
			continue
		}
		out = append(out, delta.ObjectInfo{Key: strings.TrimPrefix(obj.Key, s.prefix), Size: obj.Size, ModTime: obj.ModTime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// listLocal lists a local directory without fileblob, which stats every
// entry: names before from are skipped before any stat, so listing a long
// _delta_log from a checkpoint costs one readdir and a stat per newer file.
func (s *Store) listLocal(dir, from string) ([]delta.ObjectInfo, error) {
	ents, err := os.ReadDir(filepath.Join(s.local, filepath.FromSlash(dir)))
	if err != nil {
		return nil, s.wrap("list", dir, err)
	}
	var out []delta.ObjectInfo
	for _, e := range ents { // sorted by name
		if e.IsDir() || e.Name() < from {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed since the readdir
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, delta.ObjectInfo{Key: dir + e.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
	}
	return out, nil
}

// ListDirs implements delta.Storage.
func (s *Store) ListDirs(ctx context.Context, dir string) ([]string, error) {
	full := s.prefix + dir
	it := s.bucket.List(&blob.ListOptions{Prefix: full, Delimiter: "/"})
	var out []string
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.wrap("list", dir, err)
		}
		if obj.IsDir {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(obj.Key, full), "/"))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Stat implements delta.Storage.
func (s *Store) Stat(ctx context.Context, key string) (delta.ObjectInfo, error) {
	a, err := s.bucket.Attributes(ctx, s.prefix+key)
	if err != nil {
		return delta.ObjectInfo{}, s.wrap("stat", key, err)
	}
	return delta.ObjectInfo{Key: key, Size: a.Size, ModTime: a.ModTime}, nil
}

// ReadRange implements delta.Storage.
func (s *Store) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	r, err := s.bucket.NewRangeReader(ctx, s.prefix+key, off, length, nil)
	if err != nil {
		return nil, s.wrap("read", key, err)
	}
	return r, nil
}

// PutIfAbsent implements delta.Storage.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if s.local != "" {
		return s.linkIfAbsent(key, data)
	}
	err := s.bucket.Upload(ctx, s.prefix+key, bytes.NewReader(data), &blob.WriterOptions{
		IfNotExist:  true,
		ContentType: contentType(key),
	})
	if err != nil {
		return s.wrap("put-if-absent", key, err)
	}
	return nil
}

// linkIfAbsent writes a temp file beside the target, fsyncs it and links it
// into place: link(2) fails with EEXIST atomically when the target exists.
func (s *Store) linkIfAbsent(key string, data []byte) error {
	final := filepath.Join(s.local, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return s.wrap("put-if-absent", key, err)
	}
	tmp := filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+"."+uuid.NewString()+".tmp")
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp)
		return s.wrap("put-if-absent", key, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("put-if-absent %s/%s: %w", s.display, key, delta.ErrExists)
		}
		return s.wrap("put-if-absent", key, err)
	}
	return syncDir(filepath.Dir(final))
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Put implements delta.Storage.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := s.bucket.Upload(ctx, s.prefix+key, r, &blob.WriterOptions{ContentType: contentType(key)}); err != nil {
		return s.wrap("put", key, err)
	}
	return nil
}

// Delete implements delta.Storage.
func (s *Store) Delete(ctx context.Context, key string) error {
	err := s.bucket.Delete(ctx, s.prefix+key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return s.wrap("delete", key, err)
	}
	return nil
}

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".json"), strings.HasSuffix(key, "_last_checkpoint"), strings.HasSuffix(key, ".crc"):
		return "application/json"
	default:
		return "application/octet-stream"
	}
}

// wrap converts a gocloud error into one that names the operation and object
// and wraps the engine's sentinel for its code.
func (s *Store) wrap(op, key string, err error) error {
	loc := strings.TrimSuffix(s.display, "/") + "/" + key
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("%s %s: %w", op, loc, delta.ErrNotExist)
	case gcerrors.FailedPrecondition, gcerrors.AlreadyExists:
		return fmt.Errorf("%s %s: %w", op, loc, delta.ErrExists)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", op, loc, delta.ErrNotExist)
	}
	return fmt.Errorf("%s %s: %w", op, loc, err)
}
