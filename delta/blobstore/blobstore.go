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
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/durable"
)

// Store is a delta.Storage over a gocloud bucket, rooted at a prefix.
// Requests to remote stores are bounded by a request timeout (see
// WithRequestTimeout); the cloud SDKs retry transient failures themselves.
type Store struct {
	bucket  *blob.Bucket
	prefix  string   // key prefix of the table root within the bucket, "" or ending in '/'
	where   location // the root, named without credentials
	local   string   // filesystem directory of the root when the bucket is fileblob
	driver  string   // the gocloud driver's URL scheme (file, s3, gs, azblob, mem), "" when unknown
	timeout time.Duration
	tails   *listTails // a local root's directory listings while unchanged; shared by Sub and WithRequestTimeout
}

var _ delta.Storage = (*Store)(nil)

// Open opens the table (or warehouse) root named by location: a local path,
// a file:// URL, mem://, or an s3://, gs:// or azblob:// URL whose host is
// the bucket and whose path is the prefix of the root inside the bucket
// (for example s3://bucket/warehouse/orders?region=eu-west-1). Credentials
// come from each cloud's usual environment and configuration chain; query
// options go to the gocloud opener (see docs/object-storage.md). Open
// makes no request: a missing bucket or bad credentials show on first use.
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
	bu.Path, bu.RawPath = "", ""
	b, err := openBucket(ctx, &bu)
	if err != nil {
		// gocloud's message quotes the URL it was given, secrets included.
		return nil, fmt.Errorf("open %s: %s", Redact(location), scrubSecrets(err.Error(), u))
	}
	s := New(b, prefix, Redact(location))
	s.driver = u.Scheme
	if u.Scheme != "mem" {
		s.timeout = DefaultRequestTimeout
	}
	return s, nil
}

// New wraps an open bucket; prefix is the table root within it and display
// names it in messages (a URL without credentials). The Store has no
// request timeout.
func New(b *blob.Bucket, prefix, display string) *Store {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Store{bucket: b, prefix: prefix, where: parseWhere(display), tails: &listTails{}}
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
	// NoTempDir: fileblob stages a Put in a temp file and renames it into
	// place; in os.TempDir the rename fails (EXDEV) whenever TMPDIR is on
	// another filesystem than the table (a tmpfs /tmp), failing every append.
	b, err := fileblob.OpenBucket(abs, &fileblob.Options{Metadata: fileblob.MetadataDontWrite, NoTempDir: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	s := New(b, "", abs)
	s.local = abs
	s.driver = "file"
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

// Redact removes credentials from a URL so it can be logged: the user
// info, and the values of query parameters whose names look secret (key,
// secret, token, sig, password, credential). Other parameters keep their
// order and spelling.
func Redact(location string) string {
	u, err := url.Parse(location)
	if err != nil || !strings.Contains(location, "://") {
		return location
	}
	var params []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if kv == "" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		if isSecretParam(k) {
			kv = k + "=REDACTED"
		}
		params = append(params, kv)
	}
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if len(params) > 0 {
		out += "?" + strings.Join(params, "&")
	}
	return out
}

// scrubSecrets replaces in msg every credential of u that Redact removes
// (user info, values of secret-looking query parameters), in the raw,
// query-escaped and path-escaped spellings a message may quote.
func scrubSecrets(msg string, u *url.URL) string {
	var secrets []string
	if u.User != nil {
		secrets = append(secrets, u.User.Username())
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if isSecretParam(k) {
			secrets = append(secrets, v)
			if d, err := url.QueryUnescape(v); err == nil {
				secrets = append(secrets, d)
			}
		}
	}
	for _, v := range secrets {
		if v == "" {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			msg = strings.ReplaceAll(msg, form, "REDACTED")
		}
	}
	return msg
}

func isSecretParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.ToLower(name)
	for _, s := range []string{"secret", "key", "token", "sig", "password", "credential"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// Bucket returns the underlying bucket and the root prefix within it.
func (s *Store) Bucket() (*blob.Bucket, string) { return s.bucket, s.prefix }

// LocalDir returns the local directory of the root, or "" for remote stores.
func (s *Store) LocalDir() string { return s.local }

// Sub returns a Store rooted at dir (a child of this root), sharing the
// bucket: close only one of them.
func (s *Store) Sub(dir string) *Store {
	c := *s
	c.prefix = s.prefix + strings.Trim(dir, "/") + "/"
	c.where = s.where.sub(dir)
	if s.local != "" {
		c.local = filepath.Join(s.local, filepath.FromSlash(dir))
	}
	return &c
}

// WithRequestTimeout returns a Store sharing this one's bucket whose
// requests each fail with ErrTimeout when the store does not answer within
// d (0: no limit). Only the wait for the store counts: time a caller
// spends between reads of a ReadRange body does not.
func (s *Store) WithRequestTimeout(d time.Duration) *Store {
	c := *s
	c.timeout = d
	return &c
}

// Close closes the bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// String implements delta.Storage: the root's URL (or path) without
// credentials, query options included.
func (s *Store) String() string { return s.where.String() }

// List implements delta.Storage. On S3 and GCS the listing starts at from
// (see startAfter); elsewhere names before from are skipped here.
func (s *Store) List(ctx context.Context, dir, from string) ([]delta.ObjectInfo, error) {
	if s.local != "" {
		return s.listLocal(dir, from)
	}
	full := s.prefix + dir
	var out []delta.ObjectInfo
	err := s.list(ctx, full, from, func(obj *blob.ListObject) {
		if !obj.IsDir && strings.TrimPrefix(obj.Key, full) >= from {
			out = append(out, delta.ObjectInfo{Key: strings.TrimPrefix(obj.Key, s.prefix), Size: obj.Size, ModTime: obj.ModTime})
		}
	})
	if err != nil {
		return nil, s.wrap("list", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

var _ delta.RangeLister = (*Store)(nil)

// ListRange implements delta.RangeLister: the listing starts at from
// where the backend allows it (see startAfter) and stops at the first
// name >= to, so that no page after it is requested.
func (s *Store) ListRange(ctx context.Context, dir, from, to string) ([]delta.ObjectInfo, error) {
	if s.local != "" || to == "" {
		objs, err := s.List(ctx, dir, from)
		if err != nil || to == "" {
			return objs, err
		}
		i := sort.Search(len(objs), func(i int) bool { return strings.TrimPrefix(objs[i].Key, dir) >= to })
		return objs[:i], nil
	}
	full := s.prefix + dir
	var out []delta.ObjectInfo
	err := s.listUntil(ctx, full, from, func(obj *blob.ListObject) bool {
		name := strings.TrimPrefix(obj.Key, full)
		if name >= to {
			return false
		}
		if !obj.IsDir && name >= from {
			out = append(out, delta.ObjectInfo{Key: strings.TrimPrefix(obj.Key, s.prefix), Size: obj.Size, ModTime: obj.ModTime})
		}
		return true
	})
	if err != nil {
		return nil, s.wrap("list", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// list calls visit for every entry directly under the key prefix full
// (objects and "directories"), from the first name >= from where the
// backend can start there. Each page's wait is one guarded request.
func (s *Store) list(ctx context.Context, full, from string, visit func(*blob.ListObject)) error {
	return s.listUntil(ctx, full, from, func(o *blob.ListObject) bool { visit(o); return true })
}

// listUntil is list, stopping when visit returns false.
func (s *Store) listUntil(ctx context.Context, full, from string, visit func(*blob.ListObject) bool) error {
	g := s.newGuard(ctx)
	defer g.done()
	opts := &blob.ListOptions{Prefix: full, Delimiter: "/"}
	if from != "" {
		opts.BeforeList = startAfter(full + from)
	}
	it := s.bucket.List(opts)
	for {
		g.arm()
		obj, err := it.Next(g.ctx)
		g.disarm()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return g.check(err)
		}
		if !visit(obj) {
			return nil
		}
	}
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
	if s.local != "" {
		return s.listDirsLocal(dir)
	}
	full := s.prefix + dir
	var out []string
	err := s.list(ctx, full, "", func(obj *blob.ListObject) {
		if obj.IsDir {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(obj.Key, full), "/"))
		}
	})
	if err != nil {
		return nil, s.wrap("list", dir, err)
	}
	sort.Strings(out)
	return out, nil
}

// Stat implements delta.Storage.
func (s *Store) Stat(ctx context.Context, key string) (delta.ObjectInfo, error) {
	if s.local != "" {
		return s.statLocal(key)
	}
	g := s.newGuard(ctx)
	defer g.done()
	g.arm()
	a, err := s.bucket.Attributes(g.ctx, s.prefix+key)
	if err != nil {
		return delta.ObjectInfo{}, s.wrap("stat", key, g.check(err))
	}
	return delta.ObjectInfo{Key: key, Size: a.Size, ModTime: a.ModTime}, nil
}

// ReadRange implements delta.Storage. The request timeout applies to the
// wait for the response and to each Read of the body.
func (s *Store) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if s.local != "" {
		return s.readLocal(key, off, length)
	}
	g := s.newGuard(ctx)
	g.arm()
	r, err := s.bucket.NewRangeReader(g.ctx, s.prefix+key, off, length, nil)
	g.disarm()
	if err != nil {
		err = g.check(err)
		g.done()
		return nil, s.wrap("read", key, err)
	}
	return &guardedReader{rc: r, g: g, wrap: func(err error) error { return s.wrap("read", key, err) }}, nil
}

// PutIfAbsent implements delta.Storage. Local roots commit with link(2);
// remote ones with one conditional upload (If-None-Match: * on S3 and
// Azure, DoesNotExist on GCS), through bucket.Upload because gocloud's
// azureblob writer panics when a conditional write fails.
//
// After an ambiguous failure (a timeout, a reset connection) the object
// may or may not exist; the SDK may also have retried a PUT that had
// landed, and report ErrExists for the caller's own bytes. Callers must
// therefore re-read the key to learn the outcome, never blindly retry.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.CheckKey(key); err != nil {
		return fmt.Errorf("put-if-absent: %w", err)
	}
	if s.local != "" {
		return s.linkIfAbsent(key, data)
	}
	g := s.newGuard(ctx)
	defer g.done()
	g.arm()
	err := s.upload(g.ctx, key, bytes.NewReader(data), &blob.WriterOptions{
		IfNotExist:  true,
		ContentType: contentType(key),
	})
	if err != nil {
		return s.wrap("put-if-absent", key, g.check(err))
	}
	return nil
}

// upload is bucket.Upload that turns a panic of the driver into an error.
func (s *Store) upload(ctx context.Context, key string, r io.Reader, opts *blob.WriterOptions) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("upload failed: the storage driver panicked: %v", p)
		}
	}()
	return s.bucket.Upload(ctx, s.prefix+key, r, opts)
}

// linkIfAbsent writes the commit through durable.Write: a temp file
// beside the target, fsynced and linked into place (link(2) fails with
// EEXIST atomically when the target exists), its directory fsynced.
func (s *Store) linkIfAbsent(key string, data []byte) error {
	final := filepath.Join(s.local, filepath.FromSlash(key))
	if _, err := durable.Write(final, bytes.NewReader(data), durable.Exclusive); err != nil {
		if errors.Is(err, durable.ErrExists) {
			return fmt.Errorf("put-if-absent %s: %w", s.where.at(key), delta.ErrExists)
		}
		return s.wrap("put-if-absent", key, err)
	}
	return nil
}

// Put implements delta.Storage.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := s.CheckKey(key); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if s.local != "" {
		// Not fileblob's Put: it renames a temp file into place without an
		// fsync, so a checkpoint or _last_checkpoint could be empty after a
		// power loss, and its mode ignores the umask.
		if _, err := durable.Write(filepath.Join(s.local, filepath.FromSlash(key)), r, durable.Replace); err != nil {
			return s.wrap("put", key, err)
		}
		return nil
	}
	// The request timeout bounds each wait for the store: the clock runs
	// while the SDK is not pulling body bytes (sending them, or waiting
	// for the answer after the last one) and stops while our body reads
	// (a local file, a footer rewrite): a PUT the store accepts and never
	// answers fails with ErrTimeout instead of hanging until TCP gives up.
	g := s.newGuard(ctx)
	defer g.done()
	g.arm()
	err := s.upload(g.ctx, key, &guardedBody{r: r, g: g}, &blob.WriterOptions{ContentType: contentType(key)})
	if err != nil {
		return s.wrap("put", key, g.check(err))
	}
	return nil
}

// guardedBody is the body of a Put: the guard's clock stops during each
// Read of it (our side) and restarts after (the store's side).
type guardedBody struct {
	r io.Reader
	g *guard
}

func (b *guardedBody) Read(p []byte) (int, error) {
	b.g.disarm()
	n, err := b.r.Read(p)
	b.g.arm()
	return n, err
}

// Delete implements delta.Storage.
func (s *Store) Delete(ctx context.Context, key string) error {
	g := s.newGuard(ctx)
	defer g.done()
	g.arm()
	err := s.bucket.Delete(g.ctx, s.prefix+key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return s.wrap("delete", key, g.check(err))
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
