package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/serve"
)

const lsHelp = `List the live data files of a table at a version: the files a reader of that
version reads, with their row counts after deletion vectors.

SIZE is the size a mount serves, what ls -l shows there (JSON: servedSize):
a file with a deletion vector, or any file of a column-mapped table, is
served rewritten (deleted rows removed, logical column names), so its SIZE
differs from the size stored in the table (JSON: size). Computing it reads
the file's footer and the row groups with deleted rows, as the mount does
on the first stat; --stored prints the stored sizes and reads no data file.

SPEC is latest (default), vN, or a time: 2026-05-01 (UTC midnight),
2026-05-01T14:30:00Z, 2026-05-01T16:30:00+02:00 or 20260501143000000.

Examples:
  deltafs ls ./orders
  deltafs ls ./orders@v3 --json | jq .rows
  deltafs ls 's3://bucket/orders?region=eu-west-1@2026-05-01'
`

type lsEntry struct {
	Path            string             `json:"path"`
	Size            int64              `json:"size"`                 // stored, as in the add action
	ServedSize      int64              `json:"servedSize,omitempty"` // what a mount serves; 0 with --stored
	PartitionValues map[string]*string `json:"partitionValues"`
	NumRecords      int64              `json:"numRecords"`
	DeletedRows     int64              `json:"deletedRows"`
	Rows            int64              `json:"rows"`
	DeletionVector  string             `json:"deletionVector,omitempty"`
}

func runLs(ctx context.Context, args []string) error {
	fs := newFlags("ls", "URL[@SPEC]", lsHelp)
	asJSON := fs.Bool("json", false, "print one JSON object per file")
	storedOnly := fs.Bool("stored", false, "print stored sizes only, without reading data files (a mount serves DV'd and column-mapped files with other sizes)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs, "want one table URL[@SPEC], got %d arguments", len(pos))
	}
	location, specText := splitSpec(pos[0])
	spec, err := delta.ParseSpec(specText)
	if err != nil {
		return err
	}
	t, closeFn, err := openTable(ctx, location)
	if err != nil {
		return err
	}
	defer closeFn()
	snap, err := t.SnapshotAt(ctx, spec)
	if err != nil {
		return err
	}
	var served servedSizer
	if !*storedOnly {
		sizes, err := serve.NewServedSizes(snap, false)
		if err != nil {
			return err
		}
		served = func(f *delta.LiveFile) (int64, error) {
			return sizes.Size(ctx, f, delta.NewReaderAt(ctx, t.Storage(), f.Key))
		}
	}
	each := func(emit func(lsEntry) error) error { return eachLsEntry(ctx, snap, served, emit) }
	return printStream(*asJSON, each, func(w io.Writer, each func(func(lsEntry) error) error) error {
		return printLs(w, snap, served, each)
	})
}

// servedSizer returns the size a mount serves for a live file; nil: the
// stored sizes only.
type servedSizer func(f *delta.LiveFile) (int64, error)

// eachLsEntry calls fn for each live file of snap in path order. It holds
// one pointer a file for the sort and makes each entry as it is printed,
// so that listing 1,000,000 files costs little beyond the snapshot.
func eachLsEntry(ctx context.Context, snap *delta.Snapshot, served servedSizer, fn func(lsEntry) error) error {
	adds := slices.Clone(snap.Files())
	slices.SortFunc(adds, func(a, b *delta.Add) int {
		if c := cmp.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return cmp.Compare(a.DeletionVector.UniqueID(), b.DeletionVector.UniqueID())
	})
	// Served sizes read each file's footer (a ranged GET on an object
	// store): a batch of files is sized at once, and printed in order.
	sizes := make([]int64, lsBatch)
	for start := 0; start < len(adds); start += lsBatch {
		batch := adds[start:min(start+lsBatch, len(adds))]
		if served != nil {
			if err := sizeBatch(ctx, snap, served, batch, sizes); err != nil {
				return err
			}
		}
		for i, a := range batch {
			f, err := snap.LiveFileOf(a)
			if err != nil {
				return err
			}
			n, err := snap.NumRecords(ctx, a)
			if err != nil {
				return err
			}
			var deleted int64
			if dv := a.DeletionVector; dv != nil {
				deleted = dv.Cardinality
			}
			e := lsEntry{
				Path: f.Key, Size: a.Size, PartitionValues: f.PartitionValues,
				NumRecords: n, DeletedRows: deleted, Rows: n - deleted,
				DeletionVector: a.DeletionVector.UniqueID(),
			}
			if served != nil {
				e.ServedSize = sizes[i]
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// lsBatch is how many files `deltafs ls` sizes at once, lsWorkers how
// many footers it reads at a time: enough to hide an object store's
// latency, few enough to hold nothing per file of a large table.
const (
	lsBatch   = 1024
	lsWorkers = 16
)

// sizeBatch sets sizes[i] to the served size of batch[i], lsWorkers at a
// time; the first error (in file order) is returned.
func sizeBatch(ctx context.Context, snap *delta.Snapshot, served servedSizer, batch []*delta.Add, sizes []int64) error {
	errs := make([]error, len(batch))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(lsWorkers, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(batch); i = int(next.Add(1) - 1) {
				f, err := snap.LiveFileOf(batch[i])
				if err == nil {
					sizes[i], err = served(&f)
				}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// printLs prints the human table. Columns have fixed widths (wide enough
// for any size and row count) so that lines go out as they are made.
func printLs(w io.Writer, snap *delta.Snapshot, served servedSizer, each func(func(lsEntry) error) error) error {
	var rows, stored, size, files int64
	header := "SIZE"
	if served == nil {
		header = "STORED"
	}
	// The header goes out with the first line, so that a table that
	// fails on its first file prints only the error.
	printHeader := func() { fmt.Fprintf(w, "%14s  %12s  %10s  %s\n", header, "ROWS", "DELETED", "PATH") }
	err := each(func(e lsEntry) error {
		if files == 0 {
			printHeader()
		}
		n := e.Size
		if served != nil {
			n = e.ServedSize
		}
		rows, stored, size, files = rows+e.Rows, stored+e.Size, size+n, files+1
		_, err := fmt.Fprintf(w, "%14d  %12d  %10d  %s%s\n", n, e.Rows, e.DeletedRows, e.Path, partitionSuffix(e.PartitionValues))
		return err
	})
	if err != nil {
		return err
	}
	if files == 0 {
		printHeader()
	}
	if served == nil {
		_, err = fmt.Fprintf(w, "version %d: %d files, %d rows, %d bytes stored\n", snap.Version(), files, rows, stored)
	} else {
		_, err = fmt.Fprintf(w, "version %d: %d files, %d rows, %d bytes served, %d stored\n", snap.Version(), files, rows, size, stored)
	}
	return err
}

func partitionSuffix(pv map[string]*string) string {
	if len(pv) == 0 {
		return ""
	}
	keys := make([]string, 0, len(pv))
	for k := range pv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := "null"
		if pv[k] != nil {
			v = *pv[k]
		}
		parts[i] = k + "=" + v
	}
	return "  [" + strings.Join(parts, " ") + "]"
}
