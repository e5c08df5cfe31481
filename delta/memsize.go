package delta

import (
	"reflect"
	"unsafe"
)

// Memory estimates. The snapshot cache is bounded in bytes (Options.
// SnapshotBytes); these functions estimate what an action costs on the
// Go heap: the struct, its strings, its maps. They are estimates, kept
// cheap (no reflection): a 1,000,000-file snapshot of Spark-style adds
// (a 100-byte path, 200 bytes of JSON stats, one partition value) is
// estimated at ~550 bytes a file, within 15% of the heap measured for it.

const (
	addStructBytes    = 208 // Add struct with its header, rounded to the allocator's class
	removeStructBytes = 176
	mapBytes          = 48 // a small map's header and first bucket, per map
	mapEntryBytes     = 48 // per entry: key and value headers plus bucket share
	dvBytes           = 96
	stringBytes       = 16 // a string pointer's allocation rounding, on average
)

// addBytes estimates the heap bytes of one add action but its partition
// values' map, which the checkpoint decoder shares between the files of a
// partition: the callers charge maps (see mapSet).
func addBytes(a *Add) int64 {
	n := int64(addStructBytes + len(a.Path) + len(a.Stats) + 2*stringBytes)
	n += tagBytes(a.Tags)
	if a.DeletionVector != nil {
		n += dvBytes + int64(len(a.DeletionVector.PathOrInlineDV))
	}
	return n
}

// removeBytes estimates the heap bytes of one remove action but its
// partition values' map (as addBytes).
func removeBytes(r *Remove) int64 {
	n := int64(removeStructBytes + len(r.Path) + len(r.Stats) + stringBytes)
	n += tagBytes(r.Tags)
	if r.DeletionVector != nil {
		n += dvBytes + int64(len(r.DeletionVector.PathOrInlineDV))
	}
	return n
}

func partitionBytes(m map[string]*string) int64 {
	if m == nil {
		return 0
	}
	n := int64(mapBytes)
	for k, v := range m {
		n += mapEntryBytes + int64(len(k))
		if v != nil {
			n += 16 + int64(len(*v))
		}
	}
	return n
}

func tagBytes(m map[string]string) int64 {
	if m == nil {
		return 0
	}
	n := int64(mapBytes)
	for k, v := range m {
		n += mapEntryBytes + int64(len(k)+len(v))
	}
	return n
}

// stateActionBytes estimates the bytes of every action a state holds,
// each partition values' map counted once however many actions share it.
// (A state replayed from it keeps that: a file removed takes back its own
// bytes, not its map's, which others may share; a file added brings its
// own map, as parsed JSON does not share them.)
func stateActionBytes(st *tableState) int64 {
	var n int64
	var maps mapSet
	for _, a := range st.files {
		n += addBytes(a) + maps.bytes(a.PartitionValues)
	}
	for _, r := range st.tombstones {
		n += removeBytes(r) + maps.bytes(r.PartitionValues)
	}
	return n
}

// mapSet counts each partition values' map once: the checkpoint decoder
// shares one map between the files of a partition (1,000,000 files of a
// few thousand partitions hold a few thousand maps, where counting one per
// file overestimated such a snapshot by a third). It remembers up to
// maxMapSet maps; past that, maps count as unshared (an overestimate).
type mapSet struct{ seen map[unsafe.Pointer]struct{} }

const maxMapSet = 1 << 16

// bytes returns m's bytes the first time m is seen, else 0.
func (s *mapSet) bytes(m map[string]*string) int64 {
	if m == nil {
		return 0
	}
	p := reflect.ValueOf(m).UnsafePointer()
	if _, ok := s.seen[p]; ok {
		return 0
	}
	if s.seen == nil {
		s.seen = map[unsafe.Pointer]struct{}{}
	}
	if len(s.seen) < maxMapSet {
		s.seen[p] = struct{}{}
	}
	return partitionBytes(m)
}

// pointerBytes is what a state costs beyond its actions: its two slices of
// pointers.
func pointerBytes(st *tableState) int64 {
	return 8 * int64(cap(st.files)+cap(st.tombstones))
}
