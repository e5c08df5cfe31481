// Package pqfile serves a Parquet file with some rows removed and/or columns renamed, touching as
// little of it as possible.
//
// The output of every function here is a complete, valid Parquet file with the source's schema
// (renamed if asked), compression codec per column, key-value metadata and created_by:
//
//   - Row groups with no deleted rows are copied as raw column chunk bytes (pages are neither
//     decompressed nor decoded); only the offsets recorded in the footer move.
//   - Row groups whose rows are all deleted are dropped.
//   - Other row groups are filtered page by page when every column is flat (no repeated field)
//     and every page to decode is a v1/v2 data page with PLAIN, dictionary or
//     DELTA_LENGTH_BYTE_ARRAY values: pages without deleted rows are kept byte for byte, pages
//     with only deleted rows are dropped, the others are cut down to their live rows (still
//     encoded) and compressed again with the same codec. Chunk statistics keep min/max (still
//     bounds) with exact null counts. Any other row group is decoded column by column with
//     parquet-go, the deleted rows are skipped, and the live values are re-encoded with the same
//     codec per column.
//   - Renames and field ids change the footer only: data pages stay byte-identical.
//   - A copied column chunk's footer entry never says more than the source's: no statistics, or
//     statistics without null_count, when the source had none (else readers would prune it for
//     IS NULL); re-encoded chunks have exact null counts.
//
// A row index is the 0-based physical position of a row across all row groups, as in a Delta
// deletion vector. The package knows nothing of Delta itself: it takes a roaring64 bitmap.
//
// Page indexes (column/offset indexes) and bloom filters of the source are not carried over when
// rows are deleted (they are optional; readers fall back to the column chunk statistics). A
// footer-only rewrite keeps them, since no byte before the footer moves.
//
// Encrypted Parquet files are refused with ErrEncrypted.
package pqfile

import (
	"errors"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

var (
	// ErrCorrupt reports a source that is not a well-formed Parquet file (bad magic, footer,
	// offsets or row counts).
	ErrCorrupt = errors.New("pqfile: corrupt parquet file")
	// ErrEncrypted reports a source written with Parquet modular encryption, which is refused.
	ErrEncrypted = errors.New("pqfile: encrypted parquet is not supported")
	// ErrUnsupported reports a valid source this package cannot rewrite faithfully (for example
	// column chunks stored in another file, or a codec parquet-go cannot re-encode).
	ErrUnsupported = errors.New("pqfile: unsupported parquet feature")
	// ErrInvalidArgument reports a bad request: a deleted row index beyond the file's rows, or a
	// rename that yields an empty or duplicate name.
	ErrInvalidArgument = errors.New("pqfile: invalid argument")
)

// Rename changes the names and field ids of schema elements in the footer.
//
// A path is the slice of schema element names from the root's child down to the element, using
// the source's names (for example ["col-5f42", "list", "element"]). Name returns the new name of
// the element at path, or false to keep it; FieldID returns the field_id to set on it, or false
// to keep the source's. Either function may be nil. The path slice must not be retained.
// Column chunk path_in_schema entries follow the renamed schema.
type Rename struct {
	Name    func(path []string) (string, bool)
	FieldID func(path []string) (int32, bool)
}

// Rewrite writes to w the Parquet file src (of size bytes) without the rows whose indexes are in
// deleted (nil or empty deletes nothing) and with rename applied (nil renames nothing). It
// returns the number of bytes written. On error, w may hold a partial output.
func Rewrite(src io.ReaderAt, size int64, deleted *roaring64.Bitmap, rename *Rename, w io.Writer) (written int64, err error) {
	p, err := NewPlan(src, size, deleted, rename)
	if err != nil {
		return 0, err
	}
	return p.WriteTo(w)
}

// RewriteFooterOnly writes to w the bytes of src up to its footer followed by a new footer with
// rename applied: every byte before the footer, data pages and page indexes included, is
// identical to the source. It returns the number of bytes written.
func RewriteFooterOnly(src io.ReaderAt, size int64, rename *Rename, w io.Writer) (written int64, err error) {
	return Rewrite(src, size, nil, rename, w)
}
