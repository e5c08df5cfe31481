package delta

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

// addBytes estimates the heap bytes of one add action.
func addBytes(a *Add) int64 {
	n := int64(addStructBytes + len(a.Path) + len(a.Stats) + 2*stringBytes)
	n += partitionBytes(a.PartitionValues) + tagBytes(a.Tags)
	if a.DeletionVector != nil {
		n += dvBytes + int64(len(a.DeletionVector.PathOrInlineDV))
	}
	return n
}

// removeBytes estimates the heap bytes of one remove action.
func removeBytes(r *Remove) int64 {
	n := int64(removeStructBytes + len(r.Path) + len(r.Stats) + stringBytes)
	n += partitionBytes(r.PartitionValues) + tagBytes(r.Tags)
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

// stateActionBytes estimates the bytes of every action a state holds.
func stateActionBytes(st *tableState) int64 {
	var n int64
	for _, a := range st.files {
		n += addBytes(a)
	}
	for _, r := range st.tombstones {
		n += removeBytes(r)
	}
	return n
}

// pointerBytes is what a state costs beyond its actions: its two slices of
// pointers.
func pointerBytes(st *tableState) int64 {
	return 8 * int64(cap(st.files)+cap(st.tombstones))
}
