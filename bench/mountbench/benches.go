//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// seqTargets are the targets (ratio to native throughput) and its
// loopback figures, per config and figure.
var seqTargets = map[config][nSeqFigures]target{
	deltaPT:   {atLeast(0.9), atLeast(0.9), atLeast(0.9), atLeast(0.9)},
	deltaUser: {atLeast(0.8), atLeast(0.37), atLeast(0.18), atLeast(0.37)},
}

var seqBars = map[config][nSeqFigures]string{
	deltaPT:   {"0.91-1.0 (passthrough)", "0.91-1.0 (passthrough)", "0.91-1.0 (passthrough)", "0.91-1.0 (passthrough)"},
	deltaUser: {"0.8", "0.09-0.37", "0.11-0.18", "0.09-0.37"},
}

// benchSeq reads a large non-DV file sequentially through every config;
// configs alternate within each trial so that drift hits them alike.
func benchSeq(o options) ([]section, error) {
	root, name, size, err := seqTable(o)
	if err != nil {
		return nil, err
	}
	configs := []config{native, deltaPT, deltaUser, loopback, loopbackTuned}
	got := map[config]*[nSeqFigures][]time.Duration{}
	for _, c := range configs {
		got[c] = new([nSeqFigures][]time.Duration)
	}
	// First reads through a deltafs mount process of its own (the
	// first read of a non-DV file through a fresh mount), cold and cached,
	// and through go-fuse's loopback in a process of its own (the floor of
	// any FUSE server's fresh first read), each against a native read of
	// the stored file taken just before the process starts (a native read
	// while the machine is busy elsewhere, as the rows above, drifts).
	bin := deltafsBinary()
	var fresh, freshLoop, freshNative [nSeqFigures][]time.Duration
	for range o.trials {
		for _, c := range configs {
			d, err := seqTrial(c, o.work, root, name, size)
			if err != nil {
				return nil, err
			}
			for f := range nSeqFigures {
				got[c][f] = append(got[c][f], d[f])
			}
		}
		for _, f := range []int{coldFirst, cachedFirst} {
			if bin == "" {
				break
			}
			cached := f == cachedFirst
			for _, loop := range []bool{false, true} {
				n, err := nativeFirstRead(root, name, size, cached)
				if err != nil {
					return nil, err
				}
				freshNative[f] = append(freshNative[f], n)
				if loop {
					d, err := loopbackFreshRead(o.work, root, name, size, cached)
					if err != nil {
						return nil, fmt.Errorf("first read through a fresh loopback process: %w", err)
					}
					freshLoop[f] = append(freshLoop[f], d)
					continue
				}
				d, err := seqFreshRead(bin, o.work, root, name, size, cached)
				if err != nil {
					return nil, fmt.Errorf("first read through a fresh mount process: %w", err)
				}
				fresh[f] = append(fresh[f], d)
			}
		}
	}
	var sections []section
	for f := range nSeqFigures {
		s := section{NoteHeader: "issue's loopback figure", Title: fmt.Sprintf("sequential read of a %d MiB file, %s", o.seqBytes>>20, seqFigureNames[f]),
			Ratio: "throughput / native throughput (higher is better)"}
		base := median(got[native][f])
		for _, c := range configs {
			m := median(got[c][f])
			s.Rows = append(s.Rows, row{Figure: "seq read", Config: string(c), Value: throughput(size, m),
				Ratio: base.Seconds() / m.Seconds(), Target: seqTargets[c][f], Note: seqBars[c][f]})
		}
		if len(fresh[f]) > 0 {
			nb := median(freshNative[f])
			s.Rows = append(s.Rows, row{Figure: "seq read, native, before each fresh process", Config: string(native), Value: throughput(size, nb), Ratio: 1,
				Note: "the base of the two rows below"})
			m := median(fresh[f])
			s.Rows = append(s.Rows, row{Figure: "seq read, a fresh mount process", Config: string(deltaPT), Value: throughput(size, m),
				Ratio: nb.Seconds() / m.Seconds(), Target: atLeast(0.9), Note: "lookups and the snapshot's load included"})
			l := median(freshLoop[f])
			s.Rows = append(s.Rows, row{Figure: "seq read, a fresh loopback process", Config: "loopback-passthrough", Value: throughput(size, l),
				Ratio: nb.Seconds() / l.Seconds(), Note: "any FUSE server's floor: go-fuse's loopback, one lookup fewer"})
		}
		sections = append(sections, s)
	}
	return sections, nil
}

// benchDV times the first read of the DV table's file at v0 (no DV, the
// baseline), v1 (deletes in 1 of 8 row groups) and v2 (in all 8), with
// the backing file cached and cold.
func benchDV(o options) ([]section, error) {
	root, _ := generated(o, fmt.Sprintf("dv-%dM", o.dvBytes>>20))
	os.RemoveAll(root) // the DV file's name is random: always regenerate
	t, err := writeDVTable(root, o.dvBytes)
	if err != nil {
		return nil, err
	}
	fmt.Printf("mountbench: DV'd file %.1f MiB, %d rows in %d row groups; deletes %d (v1), %d (v2)\n",
		float64(t.size)/(1<<20), t.rows, t.rowGroups, t.deleted[1], t.deleted[2])
	var sections []section
	for _, cached := range []bool{true, false} {
		s, err := dvSection(o, t, cached)
		if err != nil {
			return nil, err
		}
		sections = append(sections, s)
	}
	s, err := rereadSection(o, t)
	if err != nil {
		return nil, err
	}
	return append(sections, s), nil
}

// rereadSection times re-reads, page cache warm: of the stored file
// natively (the baseline), and through the mount of the plain file (v0)
// and of each DV'd version, as a composite (the second read) and from its
// materialized copy (once built).
func rereadSection(o options, t *dvTable) (section, error) {
	backing := filepath.Join(t.root, t.name)
	var nat []time.Duration
	for range 5 {
		d, err := readFile(backing, t.size)
		if err != nil {
			return section{}, err
		}
		nat = append(nat, d)
	}
	base := median(nat[1:])
	s := section{NoteHeader: "note", Title: fmt.Sprintf("re-read of a %.0f MiB Parquet file, page cache warm", float64(t.size)/(1<<20)),
		Ratio: "re-read throughput / the stored file's native re-read (higher is better)"}
	s.Rows = append(s.Rows, row{Figure: "native re-read of the stored file", Config: "native", Value: throughput(t.size, base), Ratio: 1})
	names := []string{"plain (@v0, no DV)", "DV, deletes in 1 of 8 row groups", "DV, deletes in 8 of 8 row groups"}
	for v := range int64(3) {
		r, err := dvReread(t, o.work, v)
		if err != nil {
			return section{}, fmt.Errorf("v%d: %w", v, err)
		}
		if v == 0 {
			s.Rows = append(s.Rows, row{Figure: names[v], Config: string(deltaPT), Value: throughput(r.size, r.copied), Ratio: base.Seconds() / r.copied.Seconds()})
			continue
		}
		s.Rows = append(s.Rows,
			row{Figure: names[v] + ", 2nd read (composite)", Config: string(deltaPT), Value: throughput(r.size, r.composite), Ratio: base.Seconds() / r.composite.Seconds()},
			row{Figure: names[v] + ", from its copy", Config: string(deltaPT), Value: throughput(r.size, r.copied), Ratio: base.Seconds() / r.copied.Seconds(),
				Target: atLeast(0.9), Note: fmt.Sprintf("copy built %s after the 2nd open", round(r.built))})
		if r.appended > 0 {
			s.Rows = append(s.Rows, row{Figure: names[v] + ", through the next version after an unrelated append", Config: string(deltaPT),
				Value: throughput(r.size, r.appended), Ratio: base.Seconds() / r.appended.Seconds(), Target: atLeast(0.9)})
		}
	}
	return s, nil
}

func dvSection(o options, t *dvTable, cached bool) (section, error) {
	state := "cold"
	if cached {
		state = "backing file cached"
	}
	var got, stats [3][]time.Duration
	var later [3][]time.Duration // v1, v2 on a later mount (index v)
	var fresh, freshStats [3][]time.Duration
	var nat []time.Duration
	bin := deltafsBinary()
	for range o.trials {
		backing := filepath.Join(t.root, t.name)
		if cached {
			_, err := readFile(backing, t.size)
			if err != nil {
				return section{}, err
			}
		} else {
			dropCaches()
		}
		d, err := readFile(backing, t.size)
		if err != nil {
			return section{}, err
		}
		nat = append(nat, d)
		for v := range int64(3) {
			d, err := dvFirstRead(t, o.work, v, cached)
			if err != nil {
				return section{}, fmt.Errorf("v%d: %w", v, err)
			}
			got[v], stats[v] = append(got[v], d[0]+d[1]), append(stats[v], d[0])
		}
		for v := int64(0); bin != "" && v < 3; v++ {
			d, err := dvFreshRead(bin, t, o.work, v, cached)
			if err != nil {
				return section{}, fmt.Errorf("v%d through a fresh mount process: %w", v, err)
			}
			fresh[v], freshStats[v] = append(fresh[v], d[0]+d[1]), append(freshStats[v], d[0])
		}
		for v := int64(1); v < 3; v++ {
			d, err := dvLaterMountRead(t, o.work, v, cached)
			if err != nil {
				return section{}, fmt.Errorf("v%d on a later mount: %w", v, err)
			}
			later[v] = append(later[v], d[0]+d[1])
		}
	}
	s := section{NoteHeader: "issue's loopback figure", Title: fmt.Sprintf("first read of a %.0f MiB Parquet file through deltafs (passthrough), %s", float64(t.size)/(1<<20), state),
		Ratio: "time of stat + open/read/close / the same for the plain (no DV) file through the mount (lower is better)"}
	base := median(got[0])
	s.Rows = append(s.Rows, row{Figure: "native read", Config: "native", Value: throughput(t.size, median(nat)), Ratio: median(nat).Seconds() / base.Seconds()})
	names := []string{"plain (@v0, no DV)", "DV, deletes in 1 of 8 row groups", "DV, deletes in 8 of 8 row groups"}
	targets := []target{noTarget, atMost(1.5), atMost(3)}
	for v := range 3 {
		m := median(got[v])
		value := fmt.Sprintf("%s (stat %s)", round(m), round(median(stats[v])))
		s.Rows = append(s.Rows, row{Figure: names[v], Config: string(deltaPT), Value: value, Ratio: m.Seconds() / base.Seconds(), Target: targets[v]})
	}
	if bin != "" {
		fb := median(fresh[0])
		for v := range 3 {
			m := median(fresh[v])
			value := fmt.Sprintf("%s (stat %s)", round(m), round(median(freshStats[v])))
			s.Rows = append(s.Rows, row{Figure: names[v] + ", a fresh mount process", Config: string(deltaPT), Value: value,
				Ratio: m.Seconds() / fb.Seconds(), Target: targets[v], Note: "ratio to the plain file's, fresh"})
		}
	}
	for v := 1; v < 3; v++ {
		m := median(later[v])
		s.Rows = append(s.Rows, row{Figure: names[v] + ", a later mount (its copy on disk)", Config: string(deltaPT), Value: round(m),
			Ratio: m.Seconds() / base.Seconds(), Target: atMost(1.5)})
	}
	return s, nil
}

// benchLs lists a snapshot of o.files files, warm and cold.
func benchLs(o options) ([]section, error) {
	root, done := generated(o, fmt.Sprintf("many-%d-v2", o.files))
	if !done {
		if _, err := writeManyTable(root, o.files); err != nil {
			return nil, err
		}
	}
	configs := []config{native, deltaPT, loopback, loopbackTuned}
	warm := section{NoteHeader: "issue's loopback figure", Title: fmt.Sprintf("ls -l of %d files, warm (median of %d runs after one)", o.files, o.lsRuns),
		Ratio: "time / native time (lower is better)"}
	cold := section{NoteHeader: "issue's loopback figure", Title: fmt.Sprintf("ls -l of %d files, cold (fresh mount, caches dropped; median of %d)", o.files, o.trials),
		Ratio: "time / native time (lower is better)"}
	var warmBase, coldBase time.Duration
	for _, c := range configs {
		ds, err := lsWarm(c, o.work, root, o.files, o.lsRuns)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		var cds []time.Duration
		for range o.trials {
			d, err := lsCold(c, o.work, root, o.files)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c, err)
			}
			cds = append(cds, d)
		}
		w, k := median(ds), median(cds)
		if c == native {
			warmBase, coldBase = w, k
		}
		wr := row{Figure: "ls -l", Config: string(c), Value: round(w), Ratio: w.Seconds() / warmBase.Seconds()}
		cr := row{Figure: "ls -l", Config: string(c), Value: round(k), Ratio: k.Seconds() / coldBase.Seconds()}
		if c == deltaPT {
			wr.Target, wr.Note = atMost(1.0), "0.78 (xattrs off, CACHE_DIR); 13 (xattrs on)"
			cr.Target, cr.Note = atMost(1.5), "1.3"
		}
		warm.Rows, cold.Rows = append(warm.Rows, wr), append(cold.Rows, cr)
	}
	return []section{warm, cold}, nil
}

// benchOpen times open + read 1 byte + close of a small file, warm.
func benchOpen(o options) ([]section, error) {
	root, done := generated(o, fmt.Sprintf("many-%d-v2", o.files))
	name := fmt.Sprintf("part-%05d-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-c000.snappy.parquet", 0)
	if !done {
		var err error
		if name, err = writeManyTable(root, o.files); err != nil {
			return nil, err
		}
	}
	s := section{NoteHeader: "issue's loopback figure", Title: fmt.Sprintf("open + read 1 byte + close of a small file, warm (p50 of %d)", o.opens),
		Ratio: "p50 / native p50 (lower is better)"}
	var base time.Duration
	for _, c := range []config{native, deltaPT, deltaUser, loopback, loopbackTuned} {
		ds, err := openReadClose(c, o.work, root, name, o.opens)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		p50 := median(ds)
		if c == native {
			base = p50
		}
		r := row{Figure: "open+read+close", Config: string(c), Value: fmt.Sprintf("%s (p90 %s)", round(p50), round(quantile(ds, 0.9))), Ratio: p50.Seconds() / base.Seconds()}
		if c == deltaPT || c == deltaUser {
			r.Target, r.Note = atMost(13), "13-18"
		}
		s.Rows = append(s.Rows, r)
	}
	return []section{s}, nil
}
