package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/bench/internal/report"
	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// sparkSpec is the Spark-shaped table of n commits: ten adds a commit with
// full statistics of nine columns and Spark's commitInfo (about 8.5 KB a
// commit), no in-commit timestamps, a DELETE of 43 files every 100
// versions, a checkpoint every 10 versions of which only the last is kept
// (Spark's defaults with the old checkpoints cleaned up), and beyond
// 100,000 live files the oldest removed (so that the 100,000-commit
// table's checkpoint is as large as the 10,000-commit one's).
func sparkSpec(n int) scalegen.Spec {
	return scalegen.Spec{Commits: n, FilesPerCommit: 10, CheckpointEvery: 10, MaxLive: 100_000,
		Spark: true, DeleteEvery: 100, DeleteFiles: 43}
}

// binaries are the deltafs binaries a Spark figure is measured with: the
// one under test and, when DELTAFS_BIN_BASE is set, a baseline build
// (another commit's) in the same run, alternating trial by trial.
func (b *bench) binaries() []string {
	if base := os.Getenv("DELTAFS_BIN_BASE"); base != "" {
		return []string{base, b.deltafs}
	}
	return []string{b.deltafs}
}

// label names a binary in the report.
func label(bin string) string {
	if bin == os.Getenv("DELTAFS_BIN_BASE") {
		return "base " + filepath.Base(bin)
	}
	return "deltafs"
}

// sparkVersions: the first `ls -l TABLE` of a fresh mount of a
// Spark-shaped table (the log in the page cache, dentries dropped), the
// mount's RSS growth during it, and the first `stat _history.jsonl` of
// another fresh mount with its RSS growth, against `ls -l` of a native
// directory with as many entries (its dentries dropped too).
func (b *bench) sparkVersions(t *genTable) error {
	n := t.res.Latest + 1
	native, err := b.nativeDir(n)
	if err != nil {
		return err
	}
	sec := report.Section{Title: fmt.Sprintf("Spark-shaped table, %d versions: first ls -l and stat of _history.jsonl (fresh mount each)", n),
		Ratio: "deltafs / native ls -l of as many entries", NoteHeader: "mount RSS before -> after (growth)"}
	bins := b.binaries()
	var nat []time.Duration
	lsl := make([][]time.Duration, len(bins))
	stat := make([][]time.Duration, len(bins))
	lslNote, statNote := make([]string, len(bins)), make([]string, len(bins))
	for i := 0; i < b.trials; i++ {
		run("ls", "-l", native)
		dropDentries()
		d, _, err := run("ls", "-l", native)
		if err != nil {
			return err
		}
		nat = append(nat, d)
		for k, bin := range bins {
			d, note, err := b.timedOnFreshMount(bin, t.dir, "ls", "-l", "")
			if err != nil {
				return err
			}
			lsl[k], lslNote[k] = append(lsl[k], d), note
			d, note, err = b.timedOnFreshMount(bin, t.dir, "stat", "-c", "%s", "_history.jsonl")
			if err != nil {
				return err
			}
			stat[k], statNote[k] = append(stat[k], d), note
		}
	}
	mn := report.Median(nat)
	for k, bin := range bins {
		ml, ms2 := report.Median(lsl[k]), report.Median(stat[k])
		sec.Rows = append(sec.Rows,
			report.Row{Figure: "first ls -l TABLE", Config: label(bin), Value: ms(ml), Ratio: ratio(ml, mn), Target: report.AtMost(3), Note: lslNote[k] + " (target <= 64 MiB)"},
			report.Row{Figure: "first stat _history.jsonl", Config: label(bin), Value: ms(ms2), Ratio: ratio(ms2, mn), Note: statNote[k]})
	}
	sec.Rows = append(sec.Rows, report.Row{Figure: "native first ls -l", Config: "native", Value: ms(mn)})
	b.sections = append(b.sections, sec)
	return nil
}

// timedOnFreshMount mounts dir with bin, drops the dentries, runs
// `cmd args... MNT/t[/name]` and returns its wall time and the mount's
// RSS before and after it.
func (b *bench) timedOnFreshMount(bin, dir, cmd string, args ...string) (time.Duration, string, error) {
	name := args[len(args)-1]
	args = args[:len(args)-1]
	m, err := b.mountWith(bin, dir)
	if err != nil {
		return 0, "", err
	}
	defer m.close()
	before, _ := m.rss()
	dropDentries()
	d, _, err := run(cmd, append(args, filepath.Join(m.mnt, "t", name))...)
	after, _ := m.rss()
	return d, fmt.Sprintf("%s -> %s (+%s)", mib(before), mib(after), mib(after-before)), err
}

// sparkCache: a mount with --snapshot-cache 96M opens the 9 versions
// after the table's checkpoint and then 30 versions spread over the
// history before it (each `ls TABLE/@vN`, the farthest replayed from
// version 0), and its RSS is read after each: the target is the RSS at
// the start plus the budget (96 MiB) plus 160 MiB.
func (b *bench) sparkCache(t *genTable) error {
	latest := t.res.Latest
	cp := latest - latest%10
	var vs []int64
	for v := cp + 1; v <= latest; v++ {
		vs = append(vs, v)
	}
	rng := randomVersions(cp-1, 30, 41)
	vs = append(vs, rng...)
	sec := report.Section{Title: fmt.Sprintf("RSS under --snapshot-cache 96M, Spark-shaped table of %d versions: %d after the checkpoint, then %d far ones", latest+1, latest-cp, len(rng)),
		Ratio: "RSS at the end / (RSS at the start + 96 MiB + 160 MiB)", NoteHeader: "RSS start -> peak during -> end"}
	for _, bin := range b.binaries() {
		m, err := b.mountWith(bin, t.dir, "--snapshot-cache", "96M")
		if err != nil {
			return err
		}
		start, _ := m.rss()
		var peak int64
		t0 := time.Now()
		for _, v := range vs {
			if _, _, err := run("ls", filepath.Join(m.mnt, "t", "@v"+strconv.FormatInt(v, 10))); err != nil {
				m.close()
				return err
			}
			cur, _ := m.rss()
			peak = max(peak, cur)
		}
		took := time.Since(t0)
		end, _ := m.rss()
		m.close()
		bound := start + 256<<20
		sec.Rows = append(sec.Rows, report.Row{Figure: "RSS after 39 versions", Config: label(bin), Value: mib(end) + " in " + ms(took),
			Ratio: float64(end) / float64(bound), Target: report.AtMost(1), Note: mib(start) + " -> " + mib(peak) + " -> " + mib(end)})
	}
	var strs []string
	for _, v := range vs {
		strs = append(strs, strconv.FormatInt(v, 10))
	}
	sec.Title += " (" + strings.Join(strs, ",") + ")"
	b.sections = append(b.sections, sec)
	return nil
}
