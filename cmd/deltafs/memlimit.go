package main

import (
	"os"
	"runtime/debug"

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
