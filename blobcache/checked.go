package blobcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"syscall"
)

// A DerivedChecked file ends with a trailer of 8 bytes: the CRC-32C
// (Castagnoli, little-endian) of every byte before it, then checkMagic.
const (
	checkMagic      = "DFSC"
	checkTrailerLen = 4 + int64(len(checkMagic))
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged reports a DerivedChecked file whose bytes are not what its
// build wrote.
var ErrDamaged = errors.New("blobcache: derived file damaged")

func checkTrailer(sum uint32) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, sum), checkMagic...)
}

// verify checks f, a DerivedChecked file, against its trailer unless its
// file on disk is the one this process built or last checked (same
// inode, size and ctime). A file whose size is not the one indexed was
// cut or extended.
func (d *diskCache) verify(f *DiskFile) error {
	fi, err := f.f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if fi.Size() != f.e.size {
		return fmt.Errorf("%w: %d bytes on disk, %d written", ErrDamaged, fi.Size(), f.e.size)
	}
	id, known := identityOf(fi)
	d.mu.Lock()
	same := known && f.e.verified == id
	d.mu.Unlock()
	if same {
		return nil
	}
	if err := checkSum(f.f, fi.Size()); err != nil {
		return err
	}
	if known {
		d.mu.Lock()
		f.e.verified = id
		d.mu.Unlock()
	}
	return nil
}

// checkSum compares the CRC of the first size-8 bytes of r with the
// trailer after them.
func checkSum(r io.ReaderAt, size int64) error {
	if size < checkTrailerLen {
		return fmt.Errorf("%w: %d bytes, no trailer", ErrDamaged, size)
	}
	var tr [checkTrailerLen]byte
	if _, err := r.ReadAt(tr[:], size-checkTrailerLen); err != nil {
		return fmt.Errorf("%w: read trailer: %w", ErrDamaged, err)
	}
	if string(tr[4:]) != checkMagic {
		return fmt.Errorf("%w: no trailer", ErrDamaged)
	}
	h := crc32.New(castagnoli)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(r, 0, size-checkTrailerLen), make([]byte, 1<<20)); err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if h.Sum32() != binary.LittleEndian.Uint32(tr[:4]) {
		return fmt.Errorf("%w: CRC mismatch", ErrDamaged)
	}
	return nil
}

// fileIdentity tells whether a file on disk changed: a write, truncate
// or replacement changes its ctime or inode, and no user can set a ctime
// back. The zero value is no identity.
type fileIdentity struct {
	ino, size int64
	ctimeSec  int64
	ctimeNsec int64
}

// identityOf returns fi's identity; false when the platform gives none
// (the file is then checked on every open).
func identityOf(fi os.FileInfo) (fileIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}, false
	}
	c := statCtim(st)
	return fileIdentity{ino: int64(st.Ino), size: fi.Size(), ctimeSec: int64(c.Sec), ctimeNsec: int64(c.Nsec)}, true
}
