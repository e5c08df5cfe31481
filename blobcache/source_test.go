package blobcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"
)

var errInjected = errors.New("injected source failure")

// fakeSource is an in-memory Source that counts reads and injects faults.
type fakeSource struct {
	mu      sync.Mutex
	objects map[string][]byte // guarded by mu

	reads atomic.Int64 // ReadRange calls
	// inflight counts reads between ReadRange and the end of their wait;
	// maxInflight and maxLength record the most at once and the longest.
	inflight, maxInflight, maxLength atomic.Int64
	failN                            atomic.Int64 // the next failN reads fail with errInjected
	shortN                           atomic.Int64 // the next shortN reads return half the bytes
	delay                            time.Duration

	// hold, when set, is asked with the 1-based read number; if it returns
	// a channel the read waits for it (or its ctx) before answering.
	hold func(n int64) <-chan struct{}
	// started receives the read number of each read, if not nil.
	started chan int64
}

func newFakeSource() *fakeSource {
	return &fakeSource{objects: make(map[string][]byte)}
}

// put stores a random object of size bytes under key and returns it.
func (s *fakeSource) put(key string, size int, seed uint64) []byte {
	data := randomBytes(size, seed)
	s.mu.Lock()
	s.objects[key] = data
	s.mu.Unlock()
	return data
}

func randomBytes(size int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	data := make([]byte, size+8)
	for i := 0; i < size; i += 8 {
		binary.LittleEndian.PutUint64(data[i:], r.Uint64())
	}
	return data[:size:size]
}

func (s *fakeSource) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	n := s.reads.Add(1)
	if s.started != nil {
		s.started <- n
	}
	raiseTo(&s.maxLength, length)
	raiseTo(&s.maxInflight, s.inflight.Add(1))
	err := s.wait(ctx, n)
	s.inflight.Add(-1)
	if err != nil {
		return nil, err
	}
	if takeOne(&s.failN) {
		return nil, errInjected
	}
	s.mu.Lock()
	data, ok := s.objects[key]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: not found", key)
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	end := int64(len(data))
	if length >= 0 {
		end = min(off+length, end)
	}
	out := data[off:end]
	if takeOne(&s.shortN) {
		out = out[:len(out)/2]
	}
	return io.NopCloser(bytes.NewReader(out)), nil
}

// raiseTo sets a to v if v is larger.
func raiseTo(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// takeOne decrements a if it is positive and reports whether it did.
func takeOne(a *atomic.Int64) bool {
	for {
		v := a.Load()
		if v <= 0 {
			return false
		}
		if a.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (s *fakeSource) wait(ctx context.Context, n int64) error {
	var gate <-chan struct{}
	if s.hold != nil {
		gate = s.hold(n)
	}
	var timer <-chan time.Time
	if s.delay > 0 {
		timer = time.After(s.delay)
	}
	if gate == nil && timer == nil {
		return nil
	}
	for gate != nil || timer != nil {
		select {
		case <-gate:
			gate = nil
		case <-timer:
			timer = nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// bucketSource adapts a gocloud bucket to Source, as delta/blobstore does.
type bucketSource struct{ b *blob.Bucket }

func (s bucketSource) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	return s.b.NewRangeReader(ctx, key, off, length, nil)
}

// newCache returns a Cache closed at the end of the test.
func newCache(t testing.TB, opts Options) *Cache {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
