package main

import (
	"math"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimitMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	cases := []struct {
		name       string
		gomemlimit string // "" = unset
		budgets    int64
		want       int64 // the runtime's limit afterwards
		base       int64
	}{
		{"defaults", "", startBudgets(0, 0, 0), 256<<20 + 256<<20 + 576<<20 + memoryHeadroom, memoryHeadroom},
		{"snapshot cache 96M", "", startBudgets(1<<30, 1<<20, 96<<20), 1<<30 + 1<<20 + 108<<20 + memoryHeadroom, memoryHeadroom},
		{"GOMEMLIMIT wins", "100MiB", 1 << 30, math.MaxInt64, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			if c.gomemlimit != "" {
				t.Setenv("GOMEMLIMIT", c.gomemlimit)
			}
			if base := limitMemory(c.budgets); base != c.base {
				t.Errorf("base %d, want %d", base, c.base)
			}
			if got := debug.SetMemoryLimit(-1); got != c.want {
				t.Errorf("memory limit %d, want %d", got, c.want)
			}
		})
	}
}

// The soft limit follows the budgets: base plus what they count for, up
// and down.
func TestFollowMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	followInterval = 5 * time.Millisecond
	t.Cleanup(func() { followInterval = 2 * time.Second })
	var used atomic.Int64
	used.Store(80 << 20)
	stop := followMemory(100<<20, used.Load)
	defer stop()
	waitLimit := func(want int64) {
		t.Helper()
		for i := 0; i < 400; i++ {
			if debug.SetMemoryLimit(-1) == want {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("memory limit %d, want %d", debug.SetMemoryLimit(-1), want)
	}
	waitLimit(100<<20 + 80<<20)
	used.Store(0)
	waitLimit(100 << 20)
}
