package serve

// VerdictJournal: the verdicts of a table's files kept in the disk cache,
// so that a remount reads no footer again.

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// VerdictJournal keeps the verdicts of stored files (served as stored, or
// rewritten with a size) across mounts, in a file of the disk cache. A
// data file never changes, so the verdict of its footer made by one mount
// holds for the next: a fresh mount's first listing then stats its files
// without reading their footers (ls -l of 10,000 files with the page
// cache dropped reads 10,000 footers from disk otherwise).
//
// A verdict's key is a SHA-256 of what it derives from (the store, the
// file's path, size and modification time, its deletion vector, the
// snapshot's shape and column mapping), computed only when the mount's
// memory has no verdict for a file. Each record is 28 bytes: the key's
// first 16 bytes, the verdict, and a CRC-32C of both, so a record torn by
// a crash is skipped when read. Records are written out every
// journalFlush; the journal is compacted when opened, keeping the last
// maxVerdicts. A verdict read back is checked as any other: a file whose
// bytes no longer match the size it gives fails its open (ErrCorruptLog),
// never serves wrong bytes.
type VerdictJournal struct {
	path string
	log  *slog.Logger

	// inherited is whether the journal held verdicts when opened: without
	// them, the verdicts it holds are this mount's, which its memory
	// holds too, and a lookup (a hash of the file's identity) is not
	// worth making.
	inherited bool

	mu sync.Mutex
	m  map[stableVerdict]int64 // guarded by mu
	f  *os.File                // guarded by mu; nil once closed
	w  *bufio.Writer           // guarded by mu

	stop chan struct{}
	done chan struct{}
}

type stableVerdict [16]byte

const (
	verdictRecord = 28
	journalFlush  = 100 * time.Millisecond
)

// OpenVerdictJournal reads the journal at path (a missing one is empty),
// rewrites it compacted, and keeps it open for the verdicts to come.
func OpenVerdictJournal(path string, log *slog.Logger) (*VerdictJournal, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	j := &VerdictJournal{path: path, log: log, m: map[stableVerdict]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := j.load(); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("deltafs: verdict journal unreadable; stats read footers again", "file", path, "err", err)
		clear(j.m)
	}
	j.inherited = len(j.m) > 0
	if err := j.rewrite(); err != nil {
		return nil, err
	}
	go j.flushLoop()
	return j, nil
}

// load reads every whole record whose CRC holds; later records win.
func (j *VerdictJournal) load() error {
	f, err := os.Open(j.path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var rec [verdictRecord]byte
	for {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return err
		}
		if crc32.Checksum(rec[:24], castagnoli) != binary.LittleEndian.Uint32(rec[24:]) {
			continue
		}
		if len(j.m) >= maxVerdicts {
			clear(j.m) // the newest are kept, as the memory cache does
		}
		j.m[stableVerdict(rec[:16])] = int64(binary.LittleEndian.Uint64(rec[16:24]))
	}
}

// rewrite writes the verdicts held to a new journal and keeps it open.
func (j *VerdictJournal) rewrite() error {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	for k, n := range j.m {
		writeVerdict(w, k, n)
	}
	err = w.Flush()
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	j.f, j.w = f, w
	return nil
}

func writeVerdict(w *bufio.Writer, k stableVerdict, n int64) {
	var rec [verdictRecord]byte
	copy(rec[:16], k[:])
	binary.LittleEndian.PutUint64(rec[16:24], uint64(n))
	binary.LittleEndian.PutUint32(rec[24:], crc32.Checksum(rec[:24], castagnoli))
	w.Write(rec[:])
}

func (j *VerdictJournal) get(k stableVerdict) (int64, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	n, ok := j.m[k]
	return n, ok
}

// put records a verdict (servedAsStored or a rewritten size).
func (j *VerdictJournal) put(k stableVerdict, n int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if old, ok := j.m[k]; ok && old == n {
		return
	}
	if len(j.m) >= maxVerdicts {
		clear(j.m)
	}
	j.m[k] = n
	if j.w != nil {
		writeVerdict(j.w, k, n)
	}
}

func (j *VerdictJournal) flushLoop() {
	defer close(j.done)
	tick := time.NewTicker(journalFlush)
	defer tick.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-tick.C:
			j.mu.Lock()
			if j.w != nil {
				if err := j.w.Flush(); err != nil {
					j.log.Warn("deltafs: verdict journal write failed; verdicts kept in memory only", "file", j.path, "err", err)
					j.f.Close()
					j.f, j.w = nil, nil
				}
			}
			j.mu.Unlock()
		}
	}
}

// Close writes out and closes the journal.
func (j *VerdictJournal) Close() error {
	close(j.stop)
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.w.Flush()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f, j.w = nil, nil
	return err
}

// stableVerdictKey is addVerdictKey's identity as a hash that is the same
// in every process.
func stableVerdictKey(store, key string, a *delta.Add, s *snapShape, mapping string) stableVerdict {
	// The parts, each after its length, in one buffer (on the stack for
	// the usual sizes) hashed at once: a listing's warm-up computes one
	// key per file, and writing the parts one by one allocated each.
	var stack [512]byte
	b := stack[:0]
	part := func(p string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	part("deltafs-verdict/v1")
	part(store)
	part(key)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint64(b, uint64(a.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.ModificationTime))
	part(s.sum)
	part(mapping)
	if a.DeletionVector != nil {
		b = append(b, a.DeletionVector.UniqueID()...)
	}
	sum := sha256.Sum256(b)
	return stableVerdict(sum[:len(stableVerdict{})])
}
