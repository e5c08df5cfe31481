package delta

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// commitIndex is the commit files of a listing, kept compactly: 24 bytes a
// commit (version, size, modification time), the key rebuilt from the
// version, so that a listing of a million commits costs 24 MB instead of
// the ~170 bytes a LogFile in a map costs. Keys that are not the
// canonical 20-digit name (the protocol's, but the name pattern accepts
// any number of digits) are kept aside. Entries are sorted by version;
// a version appears at most once.
type commitIndex struct {
	entries []commitEntry
	odd     map[int64]string // version -> key, for non-canonical names

	monoOnce sync.Once
	mono     []int64 // per entry: modification time in ms, made strictly increasing
}

// commitEntry is one commit. size and mtimeNs are 0 when unknown (a name
// listing, see NameLister) and filled once known; they are read and
// written atomically once the index is shared.
type commitEntry struct {
	version int64
	size    int64 // bytes; 0 = unknown
	mtimeNs int64 // modification time, Unix ns; 0 = unknown
}

// canonicalCommitKey is the key of commit v under the protocol's naming.
func canonicalCommitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

// add records a commit file. Files must come in ascending version order
// (as a sorted listing gives them); a version seen again replaces the
// earlier entry, and out-of-order input is sorted by finish.
func (c *commitIndex) add(f LogFile) {
	e := commitEntry{version: f.Version, size: f.Size}
	if !f.ModTime.IsZero() {
		e.mtimeNs = f.ModTime.UnixNano()
	}
	if f.Key != canonicalCommitKey(f.Version) {
		if c.odd == nil {
			c.odd = map[int64]string{}
		}
		c.odd[f.Version] = f.Key
	}
	if n := len(c.entries); n > 0 && c.entries[n-1].version == f.Version {
		c.entries[n-1] = e
		return
	}
	c.entries = append(c.entries, e)
}

// finish sorts the entries when they were added out of order and drops
// duplicates (the last added wins).
func (c *commitIndex) finish() {
	strictly := true
	for i := 1; i < len(c.entries) && strictly; i++ {
		strictly = c.entries[i-1].version < c.entries[i].version
	}
	if strictly {
		return
	}
	sort.SliceStable(c.entries, func(i, j int) bool { return c.entries[i].version < c.entries[j].version })
	out := c.entries[:0]
	for _, e := range c.entries {
		if n := len(out); n > 0 && out[n-1].version == e.version {
			out[n-1] = e
			continue
		}
		out = append(out, e)
	}
	c.entries = out
}

// find returns the index of version v, or -1.
func (c *commitIndex) find(v int64) int {
	n := len(c.entries)
	if n == 0 {
		return -1
	}
	// Commits are nearly always contiguous: try the direct position first.
	if i := v - c.entries[0].version; i >= 0 && i < int64(n) && c.entries[i].version == v {
		return int(i)
	}
	i := sort.Search(n, func(i int) bool { return c.entries[i].version >= v })
	if i < n && c.entries[i].version == v {
		return i
	}
	return -1
}

// search returns the index of the first entry with version >= v.
func (c *commitIndex) search(v int64) int {
	return sort.Search(len(c.entries), func(i int) bool { return c.entries[i].version >= v })
}

// get returns the commit file of version v.
func (c *commitIndex) get(v int64) (LogFile, bool) {
	i := c.find(v)
	if i < 0 {
		return LogFile{}, false
	}
	return c.file(i), true
}

// has reports whether version v has a commit file.
func (c *commitIndex) has(v int64) bool { return c.find(v) >= 0 }

// file rebuilds the LogFile of entry i.
func (c *commitIndex) file(i int) LogFile {
	e := &c.entries[i]
	key, ok := c.odd[e.version]
	if !ok {
		key = canonicalCommitKey(e.version)
	}
	f := LogFile{ObjectInfo: ObjectInfo{Key: key, Size: atomic.LoadInt64(&e.size)}, Kind: KindCommit, Version: e.version}
	if ns := atomic.LoadInt64(&e.mtimeNs); ns != 0 {
		f.ModTime = time.Unix(0, ns)
	}
	return f
}

// setInfo records the size and time of entry i, learnt after listing.
func (c *commitIndex) setInfo(i int, o ObjectInfo) {
	atomic.StoreInt64(&c.entries[i].size, o.Size)
	if !o.ModTime.IsZero() {
		atomic.StoreInt64(&c.entries[i].mtimeNs, o.ModTime.UnixNano())
	}
}

// len returns the number of commits.
func (c *commitIndex) len() int { return len(c.entries) }

// versions calls fn for each commit version in ascending order.
func (c *commitIndex) versions(fn func(i int, v int64)) {
	for i, e := range c.entries {
		fn(i, e.version)
	}
}

// monotonicMs returns entry i's modification time in ms, adjusted so that
// the times strictly increase (each at least 1 ms after the previous), as
// Spark and Delta Kernel do for time travel without in-commit timestamps.
// Computed once for the whole index (8 bytes a commit): every time must be
// known first (logListing.fillTimes).
func (c *commitIndex) monotonicMs(i int) int64 {
	c.monoOnce.Do(func() {
		c.mono = make([]int64, len(c.entries))
		prev := int64(-1 << 62)
		for j := range c.entries {
			ms := c.file(j).ModTime.UnixMilli()
			if ms <= prev {
				ms = prev + 1
			}
			c.mono[j], prev = ms, ms
		}
	})
	return c.mono[i]
}

// entryCopy reads entry i atomically.
func (c *commitIndex) entryCopy(i int) commitEntry {
	e := &c.entries[i]
	return commitEntry{version: e.version, size: atomic.LoadInt64(&e.size), mtimeNs: atomic.LoadInt64(&e.mtimeNs)}
}

// merged returns the union of c and newer (entries of newer win).
func (c *commitIndex) merged(newer *commitIndex) *commitIndex {
	out := &commitIndex{entries: make([]commitEntry, 0, len(c.entries)+len(newer.entries))}
	if len(c.odd)+len(newer.odd) > 0 {
		out.odd = map[int64]string{}
		for v, k := range c.odd {
			out.odd[v] = k
		}
		for v, k := range newer.odd {
			out.odd[v] = k
		}
	}
	for i := range c.entries {
		out.entries = append(out.entries, c.entryCopy(i))
	}
	for i := range newer.entries {
		out.entries = append(out.entries, newer.entryCopy(i))
	}
	out.finish()
	return out
}
