package pqfile

import (
	"runtime"
)

// maxGroupWorkers bounds the row groups re-encoded at once (each also decodes its columns in
// parallel); with the group being written, at most maxGroupWorkers+1 encoded groups are in memory.
const maxGroupWorkers = 4

// reencoder re-encodes a plan's partly deleted row groups ahead of the writer, in file order,
// a few at a time. Its zero value (nothing to re-encode) is ready to use.
type reencoder struct {
	jobs map[int]*reencodeJob // by row group index
	sem  chan struct{}        // a token per group started and not yet taken by wait
	quit chan struct{}        // closed by stop: start no more groups
}

// reencodeJob is the re-encoding of one row group; enc and err are set before done is closed.
type reencodeJob struct {
	done chan struct{}
	enc  *encodedGroup
	err  error
}

// startReencoding opens the source for decoding, if any row group needs re-encoding, and starts
// re-encoding those groups in the background, each with the page filter where it applies, else
// with parquet-go. The caller must call stop.
func (p *Plan) startReencoding() (*reencoder, error) {
	var idx []int
	for i, g := range p.groups {
		if g.action == Reencode {
			idx = append(idx, i)
		}
	}
	r := &reencoder{quit: make(chan struct{})}
	if len(idx) == 0 {
		return r, nil
	}
	file, err := p.openFile()
	if err != nil {
		return nil, err
	}
	r.jobs = make(map[int]*reencodeJob, len(idx))
	for _, i := range idx {
		r.jobs[i] = &reencodeJob{done: make(chan struct{})}
	}
	r.sem = make(chan struct{}, min(len(idx), runtime.GOMAXPROCS(0), maxGroupWorkers))
	leaves, why := flatLeaves(p.meta.Schema)
	go r.dispatch(idx, func(i int) (*encodedGroup, error) { return p.reencode(i, leaves, why, file) })
	return r, nil
}

// dispatch starts the jobs in file order, each once a slot is free, until stopped.
func (r *reencoder) dispatch(idx []int, reencode func(int) (*encodedGroup, error)) {
	for _, i := range idx {
		select {
		case r.sem <- struct{}{}:
		case <-r.quit:
			return
		}
		j := r.jobs[i]
		go func() {
			defer close(j.done)
			j.enc, j.err = reencode(i)
		}()
	}
}

// wait returns the re-encoded row group i (which must need re-encoding) and lets the next group
// start. Groups must be waited for in file order.
func (r *reencoder) wait(i int) (*encodedGroup, error) {
	j := r.jobs[i]
	<-j.done
	enc, err := j.enc, j.err
	j.enc = nil
	<-r.sem
	return enc, err
}

// stop starts no more groups; groups already running finish in the background and are dropped.
func (r *reencoder) stop() { close(r.quit) }
