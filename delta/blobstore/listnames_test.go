package blobstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
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

// A local log listed by name still notices its newest commit rewritten
// (another table written at the same place): the refresh compares the
// commit's size and time, which a name listing learns by stat.
func TestNameListingNoticesRewrittenCommit(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	logDir := filepath.Join(root, "_delta_log")
	os.MkdirAll(logDir, 0o755)
	commit := func(v int, id, path string) {
		body := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" +
			`{"metaData":{"id":"` + id + `","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{}}}` + "\n" +
			`{"add":{"path":"` + path + `","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}` + "\n"
		if v > 0 {
			body = `{"add":{"path":"` + path + `","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}` + "\n"
		}
		if err := os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", v)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit(0, "first", "a.parquet")
	st, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	tbl := delta.Open(st, delta.Options{})
	if _, err := tbl.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	commit(1, "", "b.parquet") // an ordinary append: the refresh takes it
	if s, err := tbl.Latest(ctx); err != nil || s.Version() != 1 {
		t.Fatalf("refresh after an append: %v, %v; want version 1", s, err)
	}
	old := time.Now().Add(-time.Hour)
	commit(1, "", "another-writers-file.parquet")
	os.Chtimes(filepath.Join(logDir, fmt.Sprintf("%020d.json", 1)), old, old)
	commit(2, "", "c.parquet")
	if s, err := tbl.Latest(ctx); !errors.Is(err, delta.ErrTableChanged) {
		t.Errorf("refresh after commit 1 was rewritten: %v, %v; want ErrTableChanged", s, err)
	}
}
