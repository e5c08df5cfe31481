package delta

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// names lists commits from..to and the named checkpoints, as a listing by
// name gives them.
func names(from, to int64, checkpoints ...string) []string {
	var out []string
	for v := from; v <= to; v++ {
		out = append(out, fmt.Sprintf("%020d.json", v))
	}
	return append(out, checkpoints...)
}

func commitVersions(seg *LogSegment) []int64 {
	var out []int64
	for _, c := range seg.Commits {
		out = append(out, c.Version)
	}
	return out
}

func versionRange(from, to int64) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

// The planner's choices, from values alone: no storage.
func TestSegmentPlanner(t *testing.T) {
	cp := func(v int64) string { return fmt.Sprintf("%020d.checkpoint.parquet", v) }
	part := func(v int64, i, n int) string { return fmt.Sprintf("%020d.checkpoint.%010d.%010d.parquet", v, i, n) }
	for _, tc := range []struct {
		name    string
		l       *logListing
		bad     map[int64]bool
		v       int64
		cp      int64   // checkpoint version chosen, -1 none
		commits []int64 // commits after it
		next    int64   // when the listing starts too late: where to list next
		err     error
	}{
		{name: "newest checkpoint", l: listingOfNames(0, names(0, 15, cp(5), cp(10))), v: 15, cp: 10, commits: versionRange(11, 15), next: -1},
		{name: "version at a checkpoint", l: listingOfNames(0, names(0, 15, cp(10))), v: 10, cp: 10, next: -1},
		{name: "checkpoint after the version unused", l: listingOfNames(0, names(0, 15, cp(10))), v: 9, cp: -1, commits: versionRange(0, 9), next: -1},
		{name: "bad checkpoint skipped", l: listingOfNames(0, names(0, 15, cp(5), cp(10))), bad: map[int64]bool{10: true}, v: 15, cp: 5, commits: versionRange(6, 15), next: -1},
		{name: "incomplete multi-part skipped", l: listingOfNames(0, names(0, 12, cp(5), part(10, 1, 2))), v: 12, cp: 5, commits: versionRange(6, 12), next: -1},
		{name: "complete multi-part", l: listingOfNames(0, names(0, 12, part(10, 1, 2), part(10, 2, 2))), v: 12, cp: 10, commits: versionRange(11, 12), next: -1},
		{name: "listing from a checkpoint", l: listingOfNames(20, names(20, 25, cp(20))), v: 25, cp: 20, commits: versionRange(21, 25), next: -1},
		{name: "too late, list 3x further back", l: listingOfNames(9000, names(9000, 10000)), v: 10000, next: 6000},
		{name: "too late, at least a window back", l: listingOfNames(9995, names(9995, 10000)), v: 10000, next: 8995},
		{name: "too late, never before 0", l: listingOfNames(600, names(600, 1000)), v: 1000, next: 0},
		{name: "gap", l: listingOfNames(0, names(0, 3, fmt.Sprintf("%020d.json", 5))), v: 5, next: -1, err: ErrCorruptLog},
		{name: "beyond the log", l: listingOfNames(0, names(0, 3)), v: 4, next: -1, err: ErrVersionNotFound},
		{name: "commit 0 cleaned up", l: listingOfNames(0, names(3, 6)), v: 6, next: -1, err: ErrVersionNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &segmentPlanner{bad: tc.bad}
			seg, next, err := p.fromListing(tc.v, tc.l)
			if tc.err != nil || err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if next != tc.next {
				t.Fatalf("next listing from %d, want %d", next, tc.next)
			}
			if next >= 0 {
				if seg != nil {
					t.Fatalf("a segment %+v with a next listing", seg)
				}
				return
			}
			if seg.Version != tc.v || seg.CheckpointVersion != tc.cp || !slices.Equal(commitVersions(seg), tc.commits) {
				t.Fatalf("segment of %d: checkpoint %d commits %v; want checkpoint %d commits %v", seg.Version, seg.CheckpointVersion, commitVersions(seg), tc.cp, tc.commits)
			}
			if tc.cp >= 0 && (len(seg.Checkpoint) == 0 || seg.Checkpoint[0].Version != tc.cp) {
				t.Fatalf("checkpoint files %+v, want those of %d", seg.Checkpoint, tc.cp)
			}
		})
	}
}

func TestSegmentPlannerFirstListing(t *testing.T) {
	p := &segmentPlanner{bad: map[int64]bool{40: true}}
	for _, tc := range []struct {
		v     int64
		lc    int64
		hasLC bool
		want  int64
	}{
		{v: 30, lc: 20, hasLC: true, want: 20},       // from the checkpoint hint
		{v: 5000, lc: 20, hasLC: true, want: 20},     // however far
		{v: 30, lc: 35, hasLC: true, want: 0},        // the hint is past the version
		{v: 5000, lc: 5001, hasLC: true, want: 4000}, // ... a window before it
		{v: 5000, lc: 40, hasLC: true, want: 4000},   // the hint's checkpoint is bad
		{v: 5000, want: 4000},                        // no hint
	} {
		if got := p.firstListing(tc.v, LastCheckpoint{Version: tc.lc}, tc.hasLC); got != tc.want {
			t.Errorf("firstListing(%d, lc %d %v) = %d, want %d", tc.v, tc.lc, tc.hasLC, got, tc.want)
		}
	}
}

// A refresh lists only the new commits: the newest segment is extended
// with them, unless they do not continue it or its checkpoint went bad.
func TestSegmentPlannerExtendsTheLatest(t *testing.T) {
	all := listingOfNames(0, names(0, 12, fmt.Sprintf("%020d.checkpoint.parquet", 10)))
	latest, err := (&segmentPlanner{}).segment(12, all)
	if err != nil {
		t.Fatal(err)
	}
	refresh := listingOfNames(12, names(12, 14))
	p := &segmentPlanner{latest: latest}
	seg, l, ok, err := p.known(14, refresh)
	if !ok || err != nil || l != refresh || seg.CheckpointVersion != 10 || !slices.Equal(commitVersions(seg), versionRange(11, 14)) {
		t.Fatalf("extended: %+v from %v, %v %v; want checkpoint 10 and commits 11..14 from the refresh", seg, l, ok, err)
	}
	if latest.Commits[len(latest.Commits)-1].Version != 12 {
		t.Fatal("extending changed the latest segment")
	}

	gap := listingOfNames(12, append(names(12, 12), fmt.Sprintf("%020d.json", 14)))
	if _, _, ok, _ := p.known(14, gap); ok {
		t.Fatal("a refresh with a gap was planned from")
	}
	p.bad = map[int64]bool{10: true}
	if _, _, ok, _ := p.known(14, refresh); ok {
		t.Fatal("the latest segment was extended though its checkpoint is bad")
	}
	// With a listing from 0, its answer is final, errors included.
	p = &segmentPlanner{full: listingOfNames(0, names(0, 3, fmt.Sprintf("%020d.json", 5)))}
	if _, l, ok, err := p.known(5, nil); !ok || l != p.full || !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("from the full listing with a gap: %v %v; want its ErrCorruptLog", ok, err)
	}
	if _, _, ok, _ := p.known(6, nil); ok {
		t.Fatal("a version past the full listing was planned without listing")
	}
}
