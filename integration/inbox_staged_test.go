package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// A CSV copied into the inbox is staged as a temporary: _status.jsonl
// gets one "staged" line saying that a rename to *.parquet commits it and
// when it expires (a second close without a write adds none), the log
// says the same; the unmount logs the staged file it drops.
func TestInboxTemporaryStagedSaysSo(t *testing.T) {
	testenv.RequireFUSE(t)
	root := testenv.CopyFixture(t, fixtureAppend)
	logs := &syncBuffer{}
	cfg := mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, Mountpoint: t.TempDir(), CacheDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	srv, err := mount.Mount(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			srv.Unmount()
		}
	})
	inbox := filepath.Join(cfg.Mountpoint, "t", "inbox")
	csv := filepath.Join(inbox, "rows.csv")
	before := time.Now()
	if err := os.WriteFile(csv, []byte("letter,number\nz,26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(csv) // a reader's close: nothing new to say
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	var staged []map[string]any
	data, err := os.ReadFile(filepath.Join(inbox, "_status.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("status line %s: %v", line, err)
		}
		if e["op"] == "staged" {
			staged = append(staged, e)
		}
	}
	if len(staged) != 1 || staged[0]["file"] != "rows.csv" {
		t.Fatalf("_status.jsonl:\n%s\nwant one staged line for rows.csv", data)
	}
	note, _ := staged[0]["note"].(string)
	if !strings.Contains(note, "rename it to a final name ending in .parquet") {
		t.Errorf("staged line's note %q: want how it commits", note)
	}
	exp, err := time.Parse(time.RFC3339Nano, staged[0]["expires"].(string))
	if want := before.Add(time.Hour); err != nil || exp.Before(want.Add(-time.Second)) || exp.After(want.Add(time.Minute)) {
		t.Errorf("staged line expires %v (%v), want about %v (the default hour)", exp, err, want)
	}
	log := logs.String()
	if !strings.Contains(log, "ending in .parquet") || !strings.Contains(log, "file=rows.csv") || !strings.Contains(log, "expires=") {
		t.Errorf("log does not say rows.csv is staged, how it commits and when it expires:\n%s", log)
	}
	mounted = false
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	if log := logs.String(); !strings.Contains(log, "staged inbox file dropped, not committed") || !strings.Contains(log[strings.LastIndex(log, "dropped"):], "file=rows.csv") {
		t.Errorf("unmount log does not name the dropped rows.csv:\n%s", log)
	}
}
