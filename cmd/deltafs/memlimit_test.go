package main

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestLimitMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	cases := []struct {
		name       string
		gomemlimit string // "" = unset
		cacheBytes int64
		want       int64 // the runtime's limit afterwards
	}{
		{"default budget", "", 0, 256<<20 + memoryHeadroom},
		{"set budget", "", 1 << 30, 1<<30 + memoryHeadroom},
		{"GOMEMLIMIT wins", "100MiB", 1 << 30, math.MaxInt64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			if c.gomemlimit != "" {
				t.Setenv("GOMEMLIMIT", c.gomemlimit)
			}
			limitMemory(c.cacheBytes)
			if got := debug.SetMemoryLimit(-1); got != c.want {
				t.Errorf("memory limit %d, want %d", got, c.want)
			}
		})
	}
}
