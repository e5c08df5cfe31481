package blobcache

import "sync/atomic"

// Stats is a snapshot of a Cache's counters. Counters only grow, except
// MemoryBytes and DiskBytes, which are current levels.
type Stats struct {
	// Hits counts blocks a foreground read found in memory.
	Hits int64
	// Misses counts blocks a foreground read had to fetch or wait for.
	Misses int64
	// Fetches counts ranged reads issued to Sources (one may cover many blocks).
	Fetches int64
	// ReadAheadFetches counts the Fetches issued by read-ahead and Prefetch.
	ReadAheadFetches int64
	// BytesFetched counts bytes received from Sources.
	BytesFetched int64
	// Evictions counts blocks dropped from memory to respect MemoryBytes.
	Evictions int64
	// MemoryBytes is the bytes of blocks held in memory (≤ Options.MemoryBytes).
	MemoryBytes int64
	// Builds counts derived files built (successfully or not).
	Builds int64
	// DiskEvictions counts derived files deleted to respect DiskBytes.
	DiskEvictions int64
	// DiskBytes is the bytes of derived files on disk.
	DiskBytes int64
	// DiskDamaged counts DerivedChecked files found damaged or changed on
	// disk (then discarded and built again).
	DiskDamaged int64
}

// counters are the live atomic counterparts of Stats.
type counters struct {
	hits, misses, fetches, readAheadFetches, bytesFetched atomic.Int64
	evictions, memoryBytes                                atomic.Int64
	builds, diskEvictions, diskBytes, diskDamaged         atomic.Int64
}

// Stats returns a snapshot of the cache's counters. Each field is read
// atomically; the fields are not a consistent cut of one instant.
func (c *Cache) Stats() Stats {
	s := &c.stats
	return Stats{
		Hits:             s.hits.Load(),
		Misses:           s.misses.Load(),
		Fetches:          s.fetches.Load(),
		ReadAheadFetches: s.readAheadFetches.Load(),
		BytesFetched:     s.bytesFetched.Load(),
		Evictions:        s.evictions.Load(),
		MemoryBytes:      s.memoryBytes.Load(),
		Builds:           s.builds.Load(),
		DiskEvictions:    s.diskEvictions.Load(),
		DiskBytes:        s.diskBytes.Load(),
		DiskDamaged:      s.diskDamaged.Load(),
	}
}
