package pqfile

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

const (
	magic        = "PAR1"
	magicEncrypt = "PARE"
	// trailerLen is the footer length (4 bytes, little endian) plus the closing magic.
	trailerLen = 8
	// maxFooterLen bounds the footer we are willing to read into memory.
	maxFooterLen = 256 << 20
)

// footer is a decoded source footer and where it sits in the file.
type footer struct {
	meta  format.FileMetaData
	start int64  // offset of the first footer byte; every column chunk ends at or before it
	raw   []byte // the encoded footer (thrift compact FileMetaData), which meta may point into
}

// readFooter reads and decodes the footer of the Parquet file src of size bytes, refusing
// encrypted files.
func readFooter(src io.ReaderAt, size int64) (*footer, error) {
	if size < int64(len(magic))+trailerLen {
		return nil, fmt.Errorf("%w: file of %d bytes is too small", ErrCorrupt, size)
	}
	var head [4]byte
	var tail [trailerLen]byte
	if err := readFull(src, head[:], 0); err != nil {
		return nil, fmt.Errorf("read parquet header: %w", err)
	}
	if err := readFull(src, tail[:], size-trailerLen); err != nil {
		return nil, fmt.Errorf("read parquet trailer: %w", err)
	}
	if string(head[:]) == magicEncrypt || string(tail[4:]) == magicEncrypt {
		return nil, fmt.Errorf("%w: encrypted footer (magic PARE)", ErrEncrypted)
	}
	if string(head[:]) != magic || string(tail[4:]) != magic {
		return nil, fmt.Errorf("%w: bad magic %q...%q", ErrCorrupt, head[:], tail[4:])
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	start := size - trailerLen - n
	if n > maxFooterLen || start < int64(len(magic)) {
		return nil, fmt.Errorf("%w: footer length %d does not fit a file of %d bytes", ErrCorrupt, n, size)
	}
	lim := CurrentLimits()
	if n > lim.MaxFooterBytes {
		return nil, limitf("footer of %d bytes is over the limit of %d bytes (--max-parquet-footer)", n, lim.MaxFooterBytes)
	}
	buf := make([]byte, n)
	if err := readFull(src, buf, start); err != nil {
		return nil, fmt.Errorf("read parquet footer: %w", err)
	}
	if err := checkLimits(buf, lim); err != nil {
		return nil, fmt.Errorf("parquet footer: %w", err)
	}
	f := &footer{start: start, raw: buf}
	if err := decodeFooter(buf, &f.meta); err != nil {
		return nil, err
	}
	if err := checkNotEncrypted(&f.meta); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeFooter decodes thrift compact FileMetaData, turning decoder panics on hostile input into
// errors. Trailing bytes (a footer signature) mean a signed, hence encrypted-mode, file.
func decodeFooter(buf []byte, meta *format.FileMetaData) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: decode footer: %v", ErrCorrupt, r)
		}
	}()
	var proto thrift.CompactProtocol
	r := proto.NewReaderFromBytes(buf)
	if err := thrift.NewDecoder(r).Decode(meta); err != nil {
		return fmt.Errorf("%w: decode footer: %v", ErrCorrupt, err)
	}
	if r.BytesRead() != len(buf) {
		if meta.EncryptionAlgorithm.Value != nil {
			return fmt.Errorf("%w: signed plaintext footer", ErrEncrypted)
		}
		return fmt.Errorf("%w: %d trailing bytes after footer", ErrCorrupt, len(buf)-r.BytesRead())
	}
	return nil
}

// checkNotEncrypted refuses plaintext-footer encrypted files and encrypted column chunks.
func checkNotEncrypted(meta *format.FileMetaData) error {
	if meta.EncryptionAlgorithm.Value != nil || len(meta.FooterSigningKeyMetadata) > 0 {
		return fmt.Errorf("%w: plaintext footer with encryption algorithm", ErrEncrypted)
	}
	for i := range meta.RowGroups {
		for j := range meta.RowGroups[i].Columns {
			c := &meta.RowGroups[i].Columns[j]
			if c.CryptoMetadata.Value != nil || len(c.EncryptedColumnMetadata) > 0 {
				return fmt.Errorf("%w: row group %d column %d is encrypted", ErrEncrypted, i, j)
			}
		}
	}
	return nil
}

// encodeFooter returns the complete file tail: thrift compact meta, its length and the magic.
func encodeFooter(meta *format.FileMetaData) ([]byte, error) {
	var proto thrift.CompactProtocol
	b, err := thrift.Marshal(&proto, meta)
	if err != nil {
		return nil, fmt.Errorf("encode footer: %w", err)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(b)))
	return append(b, magic...), nil
}

// readFull reads len(b) bytes at off; a short read means the file is shorter than its footer
// claims, hence corrupt, while other read errors are passed on wrapped.
func readFull(src io.ReaderAt, b []byte, off int64) error {
	n, err := src.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		return fmt.Errorf("%w: short read of %d bytes at %d", ErrCorrupt, len(b), off)
	}
	return fmt.Errorf("read %d bytes at %d: %w", len(b), off, err)
}
