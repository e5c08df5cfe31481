package faultstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
)

// memStore returns a mem:// storage holding n objects "dir/kNN" of 1 KiB.
func memStore(t *testing.T, n int) (*blobstore.Store, [][]byte) {
	t.Helper()
	ctx := context.Background()
	st, err := blobstore.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var data [][]byte
	for i := range n {
		b := bytes.Repeat([]byte{byte(i)}, 1024)
		if err := st.Put(ctx, fmt.Sprintf("dir/k%02d", i), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		data = append(data, b)
	}
	return st, data
}

func TestDisabledAndZeroRatesPassThrough(t *testing.T) {
	inner, data := memStore(t, 3)
	for _, s := range []*Store{New(inner, 1, Rates{}), New(inner, 1, Rates{Error: 1, Timeout: 1, ShortRead: 1, StaleList: 1})} {
		if s.rates.Error == 1 {
			s.SetEnabled(false)
		}
		ls, err := s.List(context.Background(), "dir/", "")
		if err != nil || len(ls) != 3 {
			t.Fatalf("list = %d objects, %v; want 3", len(ls), err)
		}
		got, err := delta.ReadAll(context.Background(), s, "dir/k01")
		if err != nil || !bytes.Equal(got, data[1]) {
			t.Fatalf("read: %v, equal=%v", err, bytes.Equal(got, data[1]))
		}
		if c := s.Counts(); c.Faults() != 0 {
			t.Errorf("counts %+v, want no faults", c)
		}
	}
}

func TestEachFaultKind(t *testing.T) {
	inner, data := memStore(t, 5)
	ctx := context.Background()
	cases := []struct {
		name  string
		rates Rates
		check func(t *testing.T, s *Store)
	}{
		{"error", Rates{Error: 1}, func(t *testing.T, s *Store) {
			if _, err := s.Stat(ctx, "dir/k00"); !errors.Is(err, ErrInjected) {
				t.Errorf("stat err = %v, want ErrInjected", err)
			}
			if err := s.Put(ctx, "dir/new", bytes.NewReader(nil)); !errors.Is(err, ErrInjected) {
				t.Errorf("put err = %v, want ErrInjected", err)
			}
		}},
		{"timeout", Rates{Timeout: 1}, func(t *testing.T, s *Store) {
			if _, err := s.ReadRange(ctx, "dir/k00", 0, -1); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("read err = %v, want DeadlineExceeded", err)
			}
		}},
		{"short", Rates{ShortRead: 1}, func(t *testing.T, s *Store) {
			got, err := delta.ReadAll(ctx, s, "dir/k02")
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) >= len(data[2]) || !bytes.Equal(got, data[2][:len(got)]) {
				t.Errorf("short read: %d bytes, err %v; want a true prefix and ErrUnexpectedEOF", len(got), err)
			}
		}},
		{"truncate", Rates{Truncate: 1}, func(t *testing.T, s *Store) {
			got, err := delta.ReadAll(ctx, s, "dir/k02")
			if err != nil || len(got) >= len(data[2]) || !bytes.Equal(got, data[2][:len(got)]) {
				t.Errorf("truncated read: %d bytes, err %v; want a true prefix and no error", len(got), err)
			}
		}},
		{"stale", Rates{StaleList: 1}, func(t *testing.T, s *Store) {
			ls, err := s.List(ctx, "dir/", "")
			if err != nil || len(ls) >= 5 {
				t.Fatalf("stale list = %d objects, %v; want fewer than 5", len(ls), err)
			}
			for i, o := range ls {
				if o.Key != fmt.Sprintf("dir/k%02d", i) {
					t.Errorf("stale list[%d] = %s: not a prefix of the real listing", i, o.Key)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(inner, 7, c.rates)
			c.check(t, s)
			if s.Counts().Faults() == 0 {
				t.Error("no fault counted")
			}
		})
	}
}

func TestSeedReproduces(t *testing.T) {
	inner, _ := memStore(t, 1)
	outcomes := func(seed uint64) string {
		s := New(inner, seed, Rates{Error: 0.5})
		var b []byte
		for range 64 {
			_, err := s.Stat(context.Background(), "dir/k00")
			b = append(b, map[bool]byte{true: 'x', false: '.'}[err != nil])
		}
		return string(b)
	}
	if a, b := outcomes(42), outcomes(42); a != b {
		t.Errorf("same seed, different faults:\n%s\n%s", a, b)
	}
	if a, b := outcomes(42), outcomes(43); a == b {
		t.Errorf("different seeds, same 64 outcomes %s", a)
	}
}
