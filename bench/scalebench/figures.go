package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/bench/internal/report"
)

// nativeDir makes (once) a directory of n empty subdirectories named like
// a table's versions: the baseline of `ls TABLE`.
func (b *bench) nativeDir(n int64) (string, error) {
	dir := filepath.Join(b.work, fmt.Sprintf("native-dir-%d", n))
	if _, err := os.Stat(dir + ".done"); err == nil {
		return dir, nil
	}
	os.RemoveAll(dir)
	for v := int64(0); v < n; v++ {
		if err := os.MkdirAll(filepath.Join(dir, "@v"+strconv.FormatInt(v, 10)), 0o755); err != nil {
			return "", err
		}
	}
	return dir, os.WriteFile(dir+".done", nil, 0o644)
}

// nativeTree makes (once) a tree of empty files at the given paths: the
// baseline of `find @latest`.
func (b *bench) nativeTree(name string, paths []string) (string, error) {
	dir := filepath.Join(b.work, "native-tree-"+name)
	if _, err := os.Stat(dir + ".done"); err == nil {
		return dir, nil
	}
	os.RemoveAll(dir)
	made := map[string]bool{}
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if d := filepath.Dir(full); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
			made[d] = true
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			return "", err
		}
	}
	return dir, os.WriteFile(dir+".done", nil, 0o644)
}

// versions: `ls TABLE` of every version on a fresh mount, cold and warm,
// and `ls -l TABLE` warm, against a native directory of as many entries.
func (b *bench) versions(t *genTable) error {
	n := t.res.Latest + 1
	native, err := b.nativeDir(n)
	if err != nil {
		return err
	}
	sec := report.Section{Title: fmt.Sprintf("ls of a table with %d versions (fresh mount each trial)", n),
		Ratio: "deltafs / native directory of as many entries", NoteHeader: "mount RSS before -> after"}
	var cold, warm, nCold, nWarm, lsl, nLsl, first, nFirst []time.Duration
	var growth, growthL int64
	var rssNote, rssNoteL string
	for i := 0; i < b.trials; i++ {
		run("ls", "-l", native) // its blocks in the page cache, as the log's are
		dropDentries()
		d, _, err := run("ls", "-l", native)
		if err != nil {
			return err
		}
		nFirst = append(nFirst, d)
		m, err := b.mount(t.dir)
		if err != nil {
			return err
		}
		before, _ := m.rss()
		dropDentries()
		d, _, err = run("ls", "-l", filepath.Join(m.mnt, "t"))
		after, _ := m.rss()
		m.close()
		if err != nil {
			return err
		}
		first = append(first, d)
		growthL = max(growthL, after-before)
		rssNoteL = mib(before) + " -> " + mib(after)

		dropCaches()
		d, _, err = run("ls", native)
		if err != nil {
			return err
		}
		nCold = append(nCold, d)
		d, _, _ = run("ls", native)
		nWarm = append(nWarm, d)
		run("ls", "-l", native) // the first ls -l fills the dentry cache
		d, _, _ = run("ls", "-l", native)
		nLsl = append(nLsl, d)

		m, err = b.mount(t.dir)
		if err != nil {
			return err
		}
		before, _ = m.rss()
		dropCaches()
		d, _, err = run("ls", filepath.Join(m.mnt, "t"))
		if err != nil {
			m.close()
			return err
		}
		cold = append(cold, d)
		after, _ = m.rss()
		growth = max(growth, after-before)
		rssNote = mib(before) + " -> " + mib(after)
		d, _, _ = run("ls", filepath.Join(m.mnt, "t"))
		warm = append(warm, d)
		run("ls", "-l", filepath.Join(m.mnt, "t"))
		d, _, err = run("ls", "-l", filepath.Join(m.mnt, "t"))
		if err != nil {
			m.close()
			return err
		}
		lsl = append(lsl, d)
		m.close()
	}
	mc, mw, ml := report.Median(cold), report.Median(warm), report.Median(lsl)
	sec.Rows = append(sec.Rows,
		report.Row{Figure: "ls TABLE, cold", Config: "deltafs", Value: ms(mc), Ratio: ratio(mc, report.Median(nCold)), Target: report.AtMost(3), Note: rssNote},
		report.Row{Figure: "ls TABLE, warm", Config: "deltafs", Value: ms(mw), Ratio: ratio(mw, report.Median(nWarm)), Target: report.AtMost(1.5)},
		report.Row{Figure: "ls -l TABLE, warm", Config: "deltafs", Value: ms(ml), Ratio: ratio(ml, report.Median(nLsl)), Target: report.AtMost(1.5)},
		report.Row{Figure: "first ls -l TABLE (fresh mount, log in the page cache)", Config: "deltafs", Value: ms(report.Median(first)), Ratio: ratio(report.Median(first), report.Median(nFirst)), Target: report.AtMost(3), Note: rssNoteL},
		report.Row{Figure: "native ls cold / warm / ls -l warm / ls -l first", Config: "native", Value: ms(report.Median(nCold)) + " / " + ms(report.Median(nWarm)) + " / " + ms(report.Median(nLsl)) + " / " + ms(report.Median(nFirst))},
		report.Row{Figure: "RSS growth from the first ls", Config: "deltafs", Value: mib(growth), Note: "target <= 64 MiB"},
		report.Row{Figure: "RSS growth from the first ls -l", Config: "deltafs", Value: mib(growthL), Note: "target <= 64 MiB"},
	)
	b.sections = append(b.sections, sec)
	return nil
}

// oneVersion: `ls TABLE/@vN` for random N on a fresh mount against the
// minimal replay of that version (a process of its own, page cache warm
// for both).
func (b *bench) oneVersion(name string, t *genTable, count int) error {
	sec := report.Section{Title: fmt.Sprintf("ls TABLE/@vN, table %s (%d versions), fresh mount each", name, t.res.Latest+1),
		Ratio: "deltafs / minimal replay of the version", NoteHeader: "minimal replay"}
	for _, v := range randomVersions(t.res.Latest, count, 11) {
		var dfs, floor []time.Duration
		for i := 0; i < b.trials; i++ {
			d, _, err := run(os.Args[0], "replay", t.dir, strconv.FormatInt(v, 10))
			if err != nil {
				return err
			}
			floor = append(floor, d)
			m, err := b.mount(t.dir)
			if err != nil {
				return err
			}
			d, _, err = run("ls", filepath.Join(m.mnt, "t", "@v"+strconv.FormatInt(v, 10)))
			m.close()
			if err != nil {
				return err
			}
			dfs = append(dfs, d)
		}
		md, mf := report.Median(dfs), report.Median(floor)
		sec.Rows = append(sec.Rows, report.Row{Figure: fmt.Sprintf("ls @v%d", v), Config: "deltafs", Value: ms(md), Ratio: ratio(md, mf), Target: report.AtMost(1.5), Note: ms(mf)})
	}
	b.sections = append(b.sections, sec)
	return nil
}

// cliLs: `deltafs ls TABLE --json` against the minimal replay: wall time
// and peak RSS.
func (b *bench) cliLs(t *genTable) error {
	sec := report.Section{Title: fmt.Sprintf("deltafs ls --json of the latest version (%d files, %d commits, one checkpoint)", t.res.LiveFiles, t.res.Latest+1),
		Ratio: "deltafs / minimal replay", NoteHeader: "minimal replay"}
	var dfs, floor []time.Duration
	var peak, floorPeak int64
	for i := 0; i < b.trials; i++ {
		d, p, err := run(os.Args[0], "replay", t.dir, "-1")
		if err != nil {
			return err
		}
		floor, floorPeak = append(floor, d), max(floorPeak, p)
		d, p, err = run(b.deltafs, "ls", t.dir, "--json", "--stored") // the log alone, as the replay: the generated tables have no data files
		if err != nil {
			return err
		}
		dfs, peak = append(dfs, d), max(peak, p)
	}
	md, mf := report.Median(dfs), report.Median(floor)
	sec.Rows = append(sec.Rows,
		report.Row{Figure: "wall time", Config: "deltafs ls", Value: ms(md), Ratio: ratio(md, mf), Target: report.AtMost(1.5), Note: ms(mf)},
		report.Row{Figure: "peak RSS", Config: "deltafs ls", Value: mib(peak), Ratio: float64(peak) / float64(max(floorPeak, 1)), Note: mib(floorPeak) + " (target <= 100 MiB)"},
	)
	b.sections = append(b.sections, sec)
	return nil
}

// find: `find @latest -type f` warm against native find over a tree of the
// same paths; the mount's peak RSS against the minimal replay's.
func (b *bench) find(t *genTable) error {
	native, err := b.nativeTree(filepath.Base(t.dir), t.res.Paths)
	if err != nil {
		return err
	}
	sec := report.Section{Title: fmt.Sprintf("find @latest -type f, %d files", t.res.LiveFiles),
		Ratio: "deltafs / native", NoteHeader: "baseline"}
	var dfs, nat []time.Duration
	var peak, floorPeak int64
	for i := 0; i < b.trials; i++ {
		run("find", native, "-type", "f")
		d, _, err := run("find", native, "-type", "f")
		if err != nil {
			return err
		}
		nat = append(nat, d)
		_, p, err := run(os.Args[0], "replay", t.dir, "-1")
		if err != nil {
			return err
		}
		floorPeak = max(floorPeak, p)
		m, err := b.mount(t.dir)
		if err != nil {
			return err
		}
		latest := filepath.Join(m.mnt, "t", "@latest") + "/"
		if _, _, err := run("find", latest, "-type", "f"); err != nil {
			m.close()
			return err
		}
		d, _, err = run("find", latest, "-type", "f")
		_, pk := m.rss()
		m.close()
		if err != nil {
			return err
		}
		dfs, peak = append(dfs, d), max(peak, pk)
	}
	md, mn := report.Median(dfs), report.Median(nat)
	sec.Rows = append(sec.Rows,
		report.Row{Figure: "find, warm", Config: "deltafs", Value: ms(md), Ratio: ratio(md, mn), Target: report.AtMost(2), Note: "native " + ms(mn)},
		report.Row{Figure: "mount peak RSS", Config: "deltafs", Value: mib(peak), Ratio: float64(peak) / float64(max(floorPeak, 1)), Target: report.AtMost(1.5), Note: "minimal replay " + mib(floorPeak)},
	)
	b.sections = append(b.sections, sec)
	return nil
}

// manyVersions: n random versions listed together on one mount against
// one version on a fresh mount: RSS.
func (b *bench) manyVersions(t *genTable, n int) error {
	vs := randomVersions(t.res.Latest, n, 29)
	m, err := b.mount(t.dir)
	if err != nil {
		return err
	}
	if _, _, err := run("ls", "-R", filepath.Join(m.mnt, "t", "@v"+strconv.FormatInt(vs[0], 10))); err != nil {
		m.close()
		return err
	}
	one, _ := m.rss()
	m.close()
	m, err = b.mount(t.dir)
	if err != nil {
		return err
	}
	defer m.close()
	var args []string
	for _, v := range vs {
		args = append(args, filepath.Join(m.mnt, "t", "@v"+strconv.FormatInt(v, 10)))
	}
	start := time.Now()
	if _, _, err := run("ls", append([]string{"-R"}, args...)...); err != nil {
		return err
	}
	d := time.Since(start)
	all, _ := m.rss()
	strs := make([]string, len(vs))
	for i, v := range vs {
		strs[i] = strconv.FormatInt(v, 10)
	}
	b.sections = append(b.sections, report.Section{Title: fmt.Sprintf("%d random versions of the %d-file table listed together (ls -R)", n, t.res.LiveFiles),
		Ratio: "RSS / RSS after one version", NoteHeader: "versions",
		Rows: []report.Row{{Figure: "mount RSS", Config: "deltafs", Value: mib(all) + " in " + ms(d), Ratio: float64(all) / float64(max(one, 1)), Target: report.AtMost(2),
			Note: "one: " + mib(one) + "; " + strings.Join(strs, ",")}}})
	return nil
}

// lsLR: `ls -lR` of the latest snapshot, warm, against the same tree of
// empty files on the local disk; with --xattrs off (the default) and on.
func (b *bench) lsLR(name string, t *genTable) error {
	native, err := b.nativeTree(filepath.Base(t.dir), t.res.Paths)
	if err != nil {
		return err
	}
	sec := report.Section{Title: fmt.Sprintf("ls -lR of a %d-file snapshot (table %s), warm", t.res.LiveFiles, name),
		Ratio: "deltafs / native tree of the same paths", NoteHeader: "native"}
	var nat []time.Duration
	for i := 0; i < b.trials+1; i++ {
		d, _, err := run("ls", "-lR", native)
		if err != nil {
			return err
		}
		if i > 0 {
			nat = append(nat, d)
		}
	}
	mn := report.Median(nat)
	for _, x := range []struct {
		label  string
		flags  []string
		target float64
	}{{"--xattrs off", nil, 1.0}, {"--xattrs on", []string{"--xattrs"}, 2.0}} {
		m, err := b.mount(t.dir, x.flags...)
		if err != nil {
			return err
		}
		dir := filepath.Join(m.mnt, "t", "@latest") + "/"
		var ds []time.Duration
		for i := 0; i < b.trials+1; i++ {
			d, _, err := run("ls", "-lR", dir)
			if err != nil {
				m.close()
				return err
			}
			if i > 0 {
				ds = append(ds, d)
			}
		}
		m.close()
		md := report.Median(ds)
		sec.Rows = append(sec.Rows, report.Row{Figure: "ls -lR, warm", Config: "deltafs " + x.label, Value: ms(md), Ratio: ratio(md, mn), Target: report.AtMost(x.target), Note: ms(mn)})
	}
	b.sections = append(b.sections, sec)
	return nil
}

// historyStat: the first `stat TABLE/_history.jsonl` of a fresh mount
// (its size is the byte count of every version's line: the whole log is
// read once), with the page cache warm (a local log that was read
// before) and cold; the target is 2 s for 100,000 commits.
func (b *bench) historyStat(t *genTable) error {
	sec := report.Section{Title: fmt.Sprintf("first stat of _history.jsonl, %d commits (fresh mount each trial)", t.res.Latest+1),
		Ratio: "", NoteHeader: "size"}
	var warm, cold []time.Duration
	var size string
	for i := 0; i < 2*b.trials; i++ {
		m, err := b.mount(t.dir)
		if err != nil {
			return err
		}
		if i%2 == 1 {
			dropCaches()
		}
		p := filepath.Join(m.mnt, "t", "_history.jsonl")
		d, _, err := run("stat", "-c", "%s", p)
		if fi, serr := os.Stat(p); serr == nil {
			size = mib(fi.Size())
		}
		m.close()
		if err != nil {
			return err
		}
		if i%2 == 1 {
			cold = append(cold, d)
		} else {
			warm = append(warm, d)
		}
	}
	sec.Rows = append(sec.Rows,
		report.Row{Figure: "first stat, log in the page cache", Config: "deltafs", Value: ms(report.Median(warm)), Note: size},
		report.Row{Figure: "first stat, caches dropped", Config: "deltafs", Value: ms(report.Median(cold))})
	b.sections = append(b.sections, sec)
	return nil
}
