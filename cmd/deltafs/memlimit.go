package main

import (
	"os"
	"runtime/debug"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/mount"
)

// memoryHeadroom is the memory a mount needs besides what its budgets
// hold (mount.Server.MemoryBudgets): FUSE request buffers, block fetches
// in flight, the inodes the kernel holds (about 0.6 KiB each: 60 MiB for
// an ls -l of 100,000 versions), listings and the Go runtime, and room
// for the garbage collector to work in without running back to back.
// Under the load test about 100 MiB of live heap sat beyond the caches
// (docs/reliability.md, "Load").
const memoryHeadroom = 160 << 20

// limitMemory sets the Go runtime's soft memory limit to budgets (what
// the configured budgets allow at most) plus memoryHeadroom and returns
// the headroom, unless GOMEMLIMIT is set in the environment (then it
// changes nothing and returns -1). It holds while the mount starts (the
// first snapshots are built then); followMemory then lowers it to what
// the budgets hold. Without a limit the collector lets the heap grow to
// twice the live heap: a mount whose snapshot cache holds 100 MiB and
// which reads checkpoints and commits (garbage once decoded) grows well
// past its budgets in resident memory.
func limitMemory(budgets int64) int64 {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return -1
	}
	debug.SetMemoryLimit(budgets + memoryHeadroom)
	return memoryHeadroom
}

// startBudgets is what the budgets of a mount allow at most: the memory
// block cache, the validation memory and the snapshot cache with the
// eighth its estimate may miss (zero values take the defaults).
func startBudgets(memoryCache, validation, snapshots int64) int64 {
	if memoryCache <= 0 {
		memoryCache = blobcache.DefaultMemoryBytes
	}
	if validation <= 0 {
		validation = mount.DefaultValidationMemory
	}
	if snapshots <= 0 {
		snapshots = delta.DefaultStateBytes
	}
	return memoryCache + validation + snapshots*9/8
}

// followInterval is how often followMemory reads the budgets.
var followInterval = 2 * time.Second

// followMemory sets the soft memory limit to base plus what the mount's
// budgets count for now (used, read every few seconds), up and down: a
// mount reading a 1,000,000-file snapshot is not held to a limit below
// it (the collector would run back to back), and a mount whose caches
// hold little keeps a tight limit, so that its resident size stays near
// its live heap. It returns a function that stops it.
func followMemory(base int64, used func() int64) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	tick := time.NewTicker(followInterval)
	go func() {
		defer close(exited)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				debug.SetMemoryLimit(base + used())
			}
		}
	}()
	return func() { close(done); <-exited }
}
