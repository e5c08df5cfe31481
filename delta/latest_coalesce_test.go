package delta

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Concurrent Latest calls share their LISTs (each inbox create
// made one): 32 callers arriving while a slow LIST is in flight list at
// most twice what one does (the one in flight, and one shared by every
// latecomer), and each sees the version that existed when it called.
func TestLatestCoalesced(t *testing.T) {
	src := testenv.Fixture(t, "dat/basic_append")
	one := &countingStore{Storage: dirStore{src}}
	tb := Open(one, Options{})
	if _, err := tb.Latest(context.Background()); err != nil {
		t.Fatal(err)
	}
	one.lists = nil
	want, err := tb.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	per := len(one.lists)
	one.lists = nil
	slow := &slowLister{Storage: one, delay: 100 * time.Millisecond}
	tb.store = slow
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := tb.Latest(context.Background())
			if err != nil || s.Version() != want.Version() {
				t.Errorf("Latest: %v, %v; want version %d", s, err, want.Version())
			}
		}()
	}
	wg.Wait()
	if n := len(one.lists); n > 2*per || per == 0 {
		t.Errorf("32 concurrent Latest calls listed %d times (%v), one lists %d: want at most %d", n, one.lists, per, 2*per)
	}
}

// slowLister makes each List take delay.
type slowLister struct {
	Storage
	delay time.Duration
}

func (s *slowLister) List(ctx context.Context, dir, from string) ([]ObjectInfo, error) {
	time.Sleep(s.delay)
	return s.Storage.List(ctx, dir, from)
}
