package serve

// How a live file is served (stored or rewritten) and its exact served
// size, decided without reading the file where the log says enough.

import (
	"context"
	"fmt"
	"io"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

// planFor returns the rewrite of the live file f of snap, read from src:
// its deleted rows removed and, in a column-mapped table, its physical
// column names replaced by logical ones. Table writes it to the disk
// cache; ServedSizes only measures it.
func planFor(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile, rename *pqfile.Rename, shape *pqfile.Shape, src io.ReaderAt) (*pqfile.Plan, error) {
	deleted, err := snap.DeletedRows(ctx, f.Add)
	if err != nil {
		return nil, err
	}
	return pqfile.NewShapedPlan(src, f.Add.Size, deleted, rename, shape)
}

// ServedSizes gives the sizes a mount gives the live files of one
// snapshot in stat(2): the stored size for a file served byte for byte,
// the size of the rewritten file for one with a deletion vector or in a
// column-mapped table. The latter is Table's own plan (planFor), laid
// out without being written anywhere.
type ServedSizes struct {
	snap   *delta.Snapshot
	rename *pqfile.Rename // nil: the table maps no columns
	shape  *snapShape
	memo   *pqfile.ShapeMemo // footer verdicts by encoded schema, this snapshot's
}

// NewServedSizes returns the ServedSizes of snap in a mount that serves
// partition columns in files or not (partsInFiles).
func NewServedSizes(snap *delta.Snapshot, partsInFiles bool) (*ServedSizes, error) {
	rename, _, err := renameFor(snap)
	if err != nil {
		return nil, err
	}
	shape, err := shapeOf(snap, partsInFiles)
	if err != nil {
		return nil, err
	}
	return &ServedSizes{snap: snap, rename: rename, shape: shape, memo: pqfile.NewShapeMemo(servedMemoBytes)}, nil
}

// servedMemoBytes bounds a ServedSizes' memo of footer verdicts: one
// snapshot has few distinct schemas.
const servedMemoBytes = 1 << 20

// Size returns the served size of f, reading src, the stored bytes: the
// footer, and the row groups with deleted rows.
func (s *ServedSizes) Size(ctx context.Context, f *delta.LiveFile, src io.ReaderAt) (int64, error) {
	fs, err := s.shape.forFile(f)
	if err != nil {
		return 0, fmt.Errorf("served size of %s: %w", f.Key, err)
	}
	if !Rewritten(f.Add, s.rename != nil) && !s.shape.hasParts() {
		rw, err := pqfile.ShapeNeeded(src, f.Add.Size, fs, s.memo)
		if err != nil || !rw {
			return f.Add.Size, err
		}
	}
	plan, err := planFor(ctx, s.snap, f, s.rename, fs, src)
	if err != nil {
		return 0, fmt.Errorf("served size of %s: %w", f.Key, err)
	}
	l, err := plan.WriteLayout(io.Discard)
	if err != nil {
		return 0, fmt.Errorf("served size of %s: %w", f.Key, err)
	}
	return l.Size(), nil
}
