package blobstore

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testenv"
)

// sizedOnly hides the NameLister capability of a Store, so that the log is
// listed with sizes and times as object stores list it.
type sizedOnly struct{ delta.Storage }

// A local log listed by name (no stat per commit, times filled when asked)
// must answer exactly what a listing with sizes and times answers: the
// versions and their times, history, time travel, snapshot times.
func TestNameListingAgreesWithFullListing(t *testing.T) {
	ctx := context.Background()
	checked := 0
	for _, fx := range testenv.Index(t) {
		if fx.LatestVersion < 0 {
			continue
		}
		root := testenv.Fixture(t, fx.Name)
		st, err := Open(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		// A fresh by-name table for each question, so that times filled
		// for one are not what the next one finds.
		fresh := func() *delta.Table { return delta.Open(st, delta.Options{}) }
		sized := delta.Open(sizedOnly{st}, delta.Options{})
		want, werr := sized.Versions(ctx)
		got, gerr := fresh().Versions(ctx)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(times(got), times(want)) {
			t.Errorf("%s: Versions by name = %v, %v; with sizes %v, %v", fx.Name, times(got), gerr, times(want), werr)
			continue
		}
		if werr != nil {
			continue
		}
		byName := fresh()
		for _, vi := range want {
			a, aerr := byName.Version(ctx, vi.Version)
			b, berr := sized.Version(ctx, vi.Version)
			if (aerr == nil) != (berr == nil) || !a.ModTime.Equal(b.ModTime) {
				t.Errorf("%s: Version(%d) by name = %v, %v; with sizes %v, %v", fx.Name, vi.Version, a.ModTime, aerr, b.ModTime, berr)
			}
			sa, aerr := byName.Snapshot(ctx, vi.Version)
			sb, berr := sized.Snapshot(ctx, vi.Version)
			if (aerr == nil) != (berr == nil) || aerr == nil && !sa.Timestamp().Equal(sb.Timestamp()) {
				t.Errorf("%s: snapshot %d time by name %v (%v), with sizes %v (%v)", fx.Name, vi.Version, sa, aerr, sb, berr)
			}
		}
		ha, aerr := fresh().History(ctx)
		hb, berr := sized.History(ctx)
		ja, _ := json.Marshal(ha)
		jb, _ := json.Marshal(hb)
		if (aerr == nil) != (berr == nil) || string(ja) != string(jb) {
			t.Errorf("%s: history by name differs:\n%s (%v)\n%s (%v)", fx.Name, ja, aerr, jb, berr)
		}
		if len(want) > 0 {
			ts := want[len(want)/2].ModTime.Add(time.Millisecond)
			va, aerr := fresh().VersionAt(ctx, ts)
			vb, berr := sized.VersionAt(ctx, ts)
			if va != vb || (aerr == nil) != (berr == nil) {
				t.Errorf("%s: VersionAt(%s) by name %d (%v), with sizes %d (%v)", fx.Name, ts, va, aerr, vb, berr)
			}
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d fixture tables compared", checked)
	}
}

func times(vs []delta.VersionInfo) map[int64]int64 {
	out := map[int64]int64{}
	for _, v := range vs {
		out[v.Version] = v.ModTime.UnixNano()
	}
	return out
}
