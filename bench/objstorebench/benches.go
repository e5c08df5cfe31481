//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// benchSeq reads one object sequentially through fresh mounts and with a
// ranged GET, alternating inside each trial, then once more through the
// last mount (its caches warm).
func benchSeq(o options, srv *s3Server) ([]section, error) {
	name, err := writeObjectTable(srv, "seq/t", o.objBytes)
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("sequential read of a %d MiB object in S3 (versitygw on loopback; median of %d)", o.objBytes>>20, o.trials)
	return seqTrials(o, srv, "seq/t", name, o.objBytes, title)
}

// benchWAN is benchSeq through a throttle: the same object, read through
// fresh mounts and with one ranged GET, from a store with a time to first
// byte and a per-connection throughput like a remote object store's.
func benchWAN(o options, srv *s3Server) ([]section, error) {
	name, err := writeObjectTable(srv, "wan/t", o.wanBytes)
	if err != nil {
		return nil, err
	}
	th, err := spawnThrottle(srv.addr, float64(o.streamMiBs)*(1<<20), o.latency)
	if err != nil {
		return nil, err
	}
	defer th.stop()
	title := fmt.Sprintf("sequential read of a %d MiB object in S3 behind a throttle (%s to first byte, %d MiB/s per connection; median of %d)",
		o.wanBytes>>20, o.latency, o.streamMiBs, o.trials)
	return seqTrials(o, &s3Server{addr: th.addr}, "wan/t", name, o.wanBytes, title)
}

// seqTrials reads object name (size bytes) of the table at path of srv
// o.trials times, with one ranged GET and through a fresh mount in each
// trial, and returns the sections of their medians.
func seqTrials(o options, srv *s3Server, path, name string, size int64, title string) ([]section, error) {
	st, err := srv.open(path)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var get, cold, warm []readTimes
	for range o.trials {
		g, err := readGET(st, name, size)
		if err != nil {
			return nil, err
		}
		c, w, err := mountReads(o.work, size, srv.url(path), name)
		if err != nil {
			return nil, err
		}
		get, cold, warm = append(get, g), append(cold, c), append(warm, w)
	}
	return seqSections(title, size, get, cold, warm), nil
}

// mountReads reads the object twice through a fresh mount, after a stat
// that loads the snapshot (so that the reads time the data, not the log).
func mountReads(work string, size int64, url, name string) (cold, warm readTimes, err error) {
	m, err := mountTable(work, url)
	if err != nil {
		return cold, warm, err
	}
	defer m.unmount()
	p := filepath.Join(m.dir, "@v0", name)
	if _, err := os.Stat(p); err != nil {
		return cold, warm, err
	}
	if cold, err = readFile(p, size); err != nil {
		return cold, warm, err
	}
	warm, err = readFile(p, size)
	return cold, warm, err
}

func seqSections(title string, size int64, get, cold, warm []readTimes) []section {
	totals := func(ts []readTimes) time.Duration {
		return median(pick(ts, func(t readTimes) time.Duration { return t.total }))
	}
	ttfbs := func(ts []readTimes) time.Duration {
		return median(pick(ts, func(t readTimes) time.Duration { return t.ttfb }))
	}
	base, baseTTFB := totals(get), ttfbs(get)
	seq := section{Title: title,
		Ratio: "GET time / time = throughput relative to one ranged GET with gocloud's S3 reader (higher is better)"}
	seq.Rows = []row{
		{Figure: "ranged GET, whole object", Config: "gocloud s3blob", Value: throughput(size, base), Ratio: 1},
		{Figure: "fresh mount, 1st read", Config: "deltafs", Value: throughput(size, totals(cold)),
			Ratio: base.Seconds() / totals(cold).Seconds(), Target: atLeast(0.8)},
		{Figure: "same mount, 2nd read", Config: "deltafs", Value: throughput(size, totals(warm)),
			Ratio: base.Seconds() / totals(warm).Seconds()},
	}
	ttfb := section{Title: fmt.Sprintf("time to first byte (first %d KiB) of the same object", firstRead>>10),
		Ratio: "time / the GET's time (lower is better)"}
	ttfb.Rows = []row{
		{Figure: "GET to first bytes", Config: "gocloud s3blob", Value: round(baseTTFB), Ratio: 1},
		{Figure: "open + first read, fresh mount (snapshot loaded)", Config: "deltafs", Value: round(ttfbs(cold)), Ratio: ttfbs(cold).Seconds() / baseTTFB.Seconds()},
		{Figure: "open + first read, 2nd time", Config: "deltafs", Value: round(ttfbs(warm)), Ratio: ttfbs(warm).Seconds() / baseTTFB.Seconds()},
	}
	return []section{seq, ttfb}
}

func pick(ts []readTimes, f func(readTimes) time.Duration) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = f(t)
	}
	return out
}

// benchFind runs `find` over a snapshot of o.files files of an S3 table:
// on fresh mounts (the first lookup loads the snapshot from S3) and warm,
// against `find` over the same tree on the local disk.
func benchFind(o options, srv *s3Server) ([]section, error) {
	local := filepath.Join(o.work, "many-local")
	if err := writeManyTable(srv, "many/t", local, o.files); err != nil {
		return nil, err
	}
	const runs = 5
	native, err := findWarm(local, o.files, runs)
	if err != nil {
		return nil, err
	}
	var cold, warm []time.Duration
	for range o.trials {
		m, err := mountTable(o.work, srv.url("many/t"))
		if err != nil {
			return nil, err
		}
		c, err := findOnce(filepath.Join(m.dir, "@v0"), o.files)
		if err == nil {
			var ws []time.Duration
			ws, err = findWarm(filepath.Join(m.dir, "@v0"), o.files, runs)
			warm = append(warm, ws...)
		}
		m.unmount()
		if err != nil {
			return nil, err
		}
		cold = append(cold, c)
	}
	base := median(native)
	s := section{Title: fmt.Sprintf("find over a %d-file snapshot of an S3 table (%d partitions)", o.files, partitions),
		Ratio: "time / native find over the same tree of empty local files, warm (lower is better)"}
	s.Rows = []row{
		{Figure: "find, warm", Config: "native", Value: round(base), Ratio: 1},
		{Figure: "find, fresh mount (loads the snapshot)", Config: "deltafs", Value: round(median(cold)), Ratio: median(cold).Seconds() / base.Seconds()},
		{Figure: "find, warm", Config: "deltafs", Value: round(median(warm)), Ratio: median(warm).Seconds() / base.Seconds()},
	}
	return []section{s}, nil
}
