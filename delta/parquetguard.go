package delta

import (
	"encoding/binary"
	"fmt"
	"io"
)

// CheckParquetTail reads the last 8 bytes of a Parquet file of size bytes
// and checks the closing "PAR1" magic and that the footer length fits in
// the file after the opening magic. Call it before parquet-go's OpenFile
// on untrusted bytes: OpenFile allocates the footer length it reads (up to
// 4 GiB) before finding that the file is shorter, so a 20-byte file could
// otherwise exhaust memory. The error does not wrap a sentinel; callers
// add theirs.
func CheckParquetTail(r io.ReaderAt, size int64) error {
	const head, tail = 4, 8 // "PAR1"; footer length + "PAR1"
	if size < head+tail {
		return fmt.Errorf("parquet file of %d bytes is too short", size)
	}
	var b [tail]byte
	if _, err := r.ReadAt(b[:], size-tail); err != nil && err != io.EOF {
		return fmt.Errorf("read parquet footer length: %w", err)
	}
	if string(b[4:]) != "PAR1" {
		return fmt.Errorf("no PAR1 magic at the end of the parquet file")
	}
	if n := int64(binary.LittleEndian.Uint32(b[:4])); n > size-head-tail {
		return fmt.Errorf("parquet footer length %d does not fit a file of %d bytes", n, size)
	}
	return nil
}
