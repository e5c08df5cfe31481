// Package faultstore wraps a delta.Storage with injected faults, for tests
// of what the engine, the block cache and the mount do when storage
// misbehaves: errors, request timeouts, short reads and stale listings, at
// random but reproducibly (a seeded generator).
//
// A Store never corrupts bytes it returns: a faulty read ends early with an
// error (or, for Truncate, with a clean EOF before the object's end, as a
// storage that lies about lengths would), it never changes content. So a
// reader above it must either return the exact bytes or fail.
package faultstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/deltafs/deltafs/delta"
)

// ErrInjected is wrapped by every injected error that is not a timeout.
var ErrInjected = errors.New("faultstore: injected fault")

// Rates are the probabilities (0..1) of each fault per request.
type Rates struct {
	// Error fails a request with an error wrapping ErrInjected.
	Error float64
	// Timeout fails a request with an error wrapping
	// context.DeadlineExceeded, as a storage request timeout does.
	Timeout float64
	// ShortRead makes a ReadRange body end early with io.ErrUnexpectedEOF
	// (what an HTTP client reports for a cut connection).
	ShortRead float64
	// Truncate makes a ReadRange body end early with a clean io.EOF: a
	// storage that silently returns fewer bytes than asked.
	Truncate float64
	// StaleList drops a random suffix of a List result, as an eventually
	// consistent listing that has not seen the newest objects yet.
	StaleList float64
}

// Counts says how many faults of each kind a Store injected.
type Counts struct {
	Requests, Errors, Timeouts, ShortReads, Truncates, StaleLists int64
}

// Store is a delta.Storage (and a blobcache.Source) that passes requests to
// an inner Storage and injects faults at the configured Rates while
// enabled. Writes (Put, PutIfAbsent, Delete) only get errors and timeouts,
// before they reach the inner storage. Safe for concurrent use.
type Store struct {
	inner delta.Storage
	rates Rates
	on    atomic.Bool

	mu  sync.Mutex // guards rng
	rng *rand.Rand

	requests, errs, timeouts, shorts, truncs, stales atomic.Int64
}

var (
	_ delta.Storage    = (*Store)(nil)
	_ delta.KeyChecker = (*Store)(nil)
)

// CheckKey forwards delta.KeyChecker to the inner storage (faults are
// not injected here: it makes no request).
func (s *Store) CheckKey(key string) error { return delta.CheckKey(s.inner, key) }

// New returns a Store over inner, enabled, drawing faults from seed.
func New(inner delta.Storage, seed uint64, rates Rates) *Store {
	s := &Store{inner: inner, rates: rates, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s.on.Store(true)
	return s
}

// SetEnabled turns fault injection on or off; off, the Store is the inner
// storage exactly.
func (s *Store) SetEnabled(on bool) { s.on.Store(on) }

// Counts returns the faults injected so far.
func (s *Store) Counts() Counts {
	return Counts{
		Requests: s.requests.Load(), Errors: s.errs.Load(), Timeouts: s.timeouts.Load(),
		ShortReads: s.shorts.Load(), Truncates: s.truncs.Load(), StaleLists: s.stales.Load(),
	}
}

// Faults returns the number of faults injected so far, of all kinds.
func (c Counts) Faults() int64 {
	return c.Errors + c.Timeouts + c.ShortReads + c.Truncates + c.StaleLists
}

// draw reports true with probability p while the Store is enabled.
func (s *Store) draw(p float64) bool {
	if p <= 0 || !s.on.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64() < p
}

// intn returns a uniform int in [0, n), n > 0.
func (s *Store) intn(n int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Int64N(n)
}

// fail returns the injected error of a request, or nil.
func (s *Store) fail(op, key string) error {
	s.requests.Add(1)
	if s.draw(s.rates.Error) {
		s.errs.Add(1)
		return fmt.Errorf("%s %s: %w", op, key, ErrInjected)
	}
	if s.draw(s.rates.Timeout) {
		s.timeouts.Add(1)
		return fmt.Errorf("%s %s: injected request timeout: %w", op, key, context.DeadlineExceeded)
	}
	return nil
}

// List implements delta.Storage.
func (s *Store) List(ctx context.Context, dir, from string) ([]delta.ObjectInfo, error) {
	if err := s.fail("list", dir); err != nil {
		return nil, err
	}
	out, err := s.inner.List(ctx, dir, from)
	if err == nil && len(out) > 0 && s.draw(s.rates.StaleList) {
		s.stales.Add(1)
		out = out[:s.intn(int64(len(out)))]
	}
	return out, err
}

// ListDirs implements delta.Storage.
func (s *Store) ListDirs(ctx context.Context, dir string) ([]string, error) {
	if err := s.fail("list dirs", dir); err != nil {
		return nil, err
	}
	return s.inner.ListDirs(ctx, dir)
}

// Stat implements delta.Storage.
func (s *Store) Stat(ctx context.Context, key string) (delta.ObjectInfo, error) {
	if err := s.fail("stat", key); err != nil {
		return delta.ObjectInfo{}, err
	}
	return s.inner.Stat(ctx, key)
}

// ReadRange implements delta.Storage. A short or truncated body stops at
// a random point strictly before its end (an empty body stays empty).
func (s *Store) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := s.fail("read", key); err != nil {
		return nil, err
	}
	rc, err := s.inner.ReadRange(ctx, key, off, length)
	if err != nil {
		return nil, err
	}
	short, trunc := s.draw(s.rates.ShortRead), s.draw(s.rates.Truncate)
	if !short && !trunc {
		return rc, nil
	}
	// Buffer the body to cut it strictly before its real end.
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	body = body[:s.intn(int64(len(body)))]
	if short {
		s.shorts.Add(1)
		return io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{io.ErrUnexpectedEOF})), nil
	}
	s.truncs.Add(1)
	return io.NopCloser(bytes.NewReader(body)), nil
}

// errReader returns err on every Read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// PutIfAbsent implements delta.Storage.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.fail("put-if-absent", key); err != nil {
		return err
	}
	return s.inner.PutIfAbsent(ctx, key, data)
}

// Put implements delta.Storage.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := s.fail("put", key); err != nil {
		return err
	}
	return s.inner.Put(ctx, key, r)
}

// Delete implements delta.Storage.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.fail("delete", key); err != nil {
		return err
	}
	return s.inner.Delete(ctx, key)
}

// String implements delta.Storage.
func (s *Store) String() string { return "faulty " + s.inner.String() }
