//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// benchHistory: the first `ls TABLE` of a table with a long history in S3
// behind the throttle, on a fresh mount each trial (the issue
// "Production-size tables" asks <= 2 s for 100,000 commits). The table is
// written straight into the server's bucket directory by the scale
// generator (versitygw's posix backend serves files as objects), and
// measured behind two servers of the same files: versitygw, and the
// index server (listserver.go), whose LIST page costs what S3's does.
func benchHistory(o options, srv *s3Server) ([]section, error) {
	commits := envInt("DELTAFS_BENCH_HISTORY_COMMITS", 10_000)
	root := filepath.Join(o.work, "s3", bucket, "history", "t")
	start := time.Now()
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: commits, FilesPerCommit: 1, CheckpointEvery: 100,
		KeepCheckpoints: true, MaxLive: 10_000, ICT: true}); err != nil {
		return nil, err
	}
	fmt.Printf("objstorebench: history table of %d commits written in %s\n", commits, time.Since(start).Round(time.Millisecond))
	s := section{Title: fmt.Sprintf("first ls of a table with %d commits in S3 behind the throttle (%s per request, %d MiB/s per connection; median of %d)",
		commits, o.latency, o.streamMiBs, o.trials),
		Ratio: "time / 2 s (the issue's bound for 100,000 commits)", NoteHeader: "/ one sequential LIST pass"}
	rows, err := historyRows(o, srv.addr, "versitygw", commits)
	if err != nil {
		return nil, err
	}
	s.Rows = append(s.Rows, rows...)
	// The same behind a server whose LIST page costs what S3's does
	// (O(log n), not a directory read per page): what deltafs costs.
	idx, err := spawnIndexServer(filepath.Join(o.work, "s3", bucket))
	if err != nil {
		return nil, err
	}
	defer idx.stop()
	rows, err = historyRows(o, idx.addr, "index server", commits)
	if err != nil {
		return nil, err
	}
	s.Rows = append(s.Rows, rows...)
	return []section{s}, nil
}

// historyRows measures, through a throttle in front of the S3 server at
// addr, one LIST page, one sequential pass over the log, a mount and the
// first ls of the table.
func historyRows(o options, addr, server string, commits int) ([]row, error) {
	th, err := spawnThrottle(addr, float64(o.streamMiBs)*(1<<20), o.latency)
	if err != nil {
		return nil, err
	}
	defer th.stop()
	remote := &s3Server{addr: th.addr}
	st, err := remote.open("history/t")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var mounts, lss, passes, pages []time.Duration
	for range o.trials {
		// Baselines: one LIST page, and the whole log in one sequential
		// pass (what listing it cost before the parallel ranges).
		t0 := time.Now()
		if _, err := st.ListRange(context.Background(), "_delta_log/", "", "00000000000000000900"); err != nil {
			return nil, err
		}
		pages = append(pages, time.Since(t0))
		t0 = time.Now()
		if _, err := st.List(context.Background(), "_delta_log/", ""); err != nil {
			return nil, err
		}
		passes = append(passes, time.Since(t0))
		t0 = time.Now()
		m, err := mountTable(o.work, remote.url("history/t"))
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, time.Since(t0))
		t0 = time.Now()
		ents, err := os.ReadDir(m.dir)
		lss = append(lss, time.Since(t0))
		m.unmount()
		if err != nil {
			return nil, err
		}
		if len(ents) < commits {
			return nil, fmt.Errorf("ls of the table (%s): %d entries, want %d versions", server, len(ents), commits)
		}
	}
	ls, mnt, pass, page := median(lss), median(mounts), median(passes), median(pages)
	return []row{
		{Figure: "one LIST page (900 versions)", Config: server, Value: round(page), Ratio: page.Seconds() / 2},
		{Figure: "the whole log, one sequential LIST pass", Config: server, Value: round(pass), Ratio: pass.Seconds() / 2},
		{Figure: "mount (reads the newest checkpoint)", Config: "deltafs, " + server, Value: round(mnt), Ratio: mnt.Seconds() / 2},
		{Figure: "first ls TABLE (lists the whole log)", Config: "deltafs, " + server, Value: round(ls), Ratio: ls.Seconds() / 2, Target: atMost(1),
			Note: fmt.Sprintf("%.2fx", ls.Seconds()/pass.Seconds())},
	}, nil
}
