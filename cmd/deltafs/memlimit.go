package main

import (
	"os"
	"runtime/debug"
	"time"

	"github.com/deltafs/deltafs/blobcache"
)

// memoryHeadroom is the memory a mount needs besides its memory block
// cache: FUSE request buffers, block fetches in flight, snapshots, inodes
// and the Go runtime. Under the load test about 100 MiB of live heap sat
// beyond the cache (docs/reliability.md, "Load"); the rest is room for the
// garbage collector to work in without running back to back.
const memoryHeadroom = 192 << 20

// limitMemory sets the Go runtime's soft memory limit to the memory
// cache budget (cacheBytes; 0 means the cache's default) plus
// memoryHeadroom and returns it, unless GOMEMLIMIT is set in the
// environment (then it changes nothing and returns -1). Without a limit
// the collector lets the heap grow to twice the live heap, so the blocks
// the cache evicts keep resident memory near twice its budget (1 GiB was
// measured with the 256 MiB default).
func limitMemory(cacheBytes int64) int64 {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return -1
	}
	if cacheBytes <= 0 {
		cacheBytes = blobcache.DefaultMemoryBytes
	}
	limit := cacheBytes + memoryHeadroom
	debug.SetMemoryLimit(limit)
	return limit
}

// followInterval is how often followSnapshotMemory reads the cache.
var followInterval = 2 * time.Second

// followSnapshotMemory raises and lowers the soft memory limit with what
// the snapshot cache holds (used, estimated bytes, read every few
// seconds): base plus 9/8 of it, so that a mount reading a
// 1,000,000-file snapshot is not held to the limit of the block cache
// alone (the collector would run back to back), and a mount that keeps
// no snapshot keeps the tight limit. It returns a function that stops it.
func followSnapshotMemory(base int64, used func() int64) (stop func()) {
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
				debug.SetMemoryLimit(base + used()*9/8)
			}
		}
	}()
	return func() { close(done); <-exited }
}
