package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/writeback"
)

const appendHelp = `Append Parquet files to a table as ONE new version (all or nothing), with
the same validation as a drop into a mount's inbox/: every column of a file must be
a table column of a compatible type, non-nullable columns must hold no nulls.

Partitioned tables: give the partition values with --partition col=value (for all
files), or keep each file under col=value/ directories (Hive layout), e.g.
staging/date=2026-05-01/part.parquet. Prints the new version on stdout; upload
progress of large files goes to stderr.

Examples:
  deltafs append ./orders new-orders.parquet
  deltafs append ./events --partition date=2026-05-01 a.parquet b.parquet
  deltafs append 's3://bucket/events?region=eu-west-1' staging/date=2026-05-01/*.parquet
`

// partitionFlag collects repeated --partition col=value flags.
type partitionFlag map[string]*string

func (p partitionFlag) String() string { return fmt.Sprint(map[string]*string(p)) }

func (p partitionFlag) Set(s string) error {
	col, v, ok := strings.Cut(s, "=")
	if !ok || col == "" {
		return fmt.Errorf("want col=value, got %q", s)
	}
	p[col] = &v
	return nil
}

func runAppend(ctx context.Context, args []string) error {
	fs := newFlags("append", "URL FILE...", appendHelp)
	parts := partitionFlag{}
	fs.Var(parts, "partition", "partition value col=value for every file (repeatable)")
	maxRetry := fs.Duration("max-retry", 30*time.Second, "give up after losing commit races for this long")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		fs.Usage()
		return errUsage
	}
	t, closeFn, err := openTable(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeFn()
	c := writeback.New(t, writeback.Options{
		EngineInfo: "deltafs/" + version, MaxRetry: *maxRetry, Progress: printProgress,
	})
	files, err := appendFiles(ctx, c, pos[1:], parts)
	if err != nil {
		return err
	}
	res, err := c.Append(ctx, files)
	if err != nil {
		return err
	}
	fmt.Println(res.Version)
	return nil
}

// appendFiles builds the files to append: partition values from the
// flags, else from the col=value directories of each file's path.
func appendFiles(ctx context.Context, c *writeback.Committer, paths []string, flags partitionFlag) ([]writeback.File, error) {
	cols, err := c.PartitionColumns(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]writeback.File, 0, len(paths))
	for _, p := range paths {
		pv := map[string]*string(flags)
		if len(flags) == 0 && len(cols) > 0 {
			pv = hivePartitionValues(p, cols)
		}
		out = append(out, writeback.File{LocalPath: p, Name: filepath.Base(p), PartitionValues: pv})
	}
	return out, nil
}

// hivePartitionValues reads col=value directory names of path whose column
// is a partition column of the table (Hive escapes undone).
func hivePartitionValues(path string, cols []*delta.StructField) map[string]*string {
	out := map[string]*string{}
	for _, seg := range strings.Split(filepath.ToSlash(filepath.Dir(path)), "/") {
		col, v, err := delta.ParseHiveSegment(seg)
		if err != nil {
			continue
		}
		for _, f := range cols {
			if strings.EqualFold(f.Name, col) {
				out[f.Name] = v
			}
		}
	}
	return out
}

// printProgress reports uploads of files of 8 MiB or more on stderr.
func printProgress(name string, done, total int64) {
	if total < 8<<20 {
		return
	}
	fmt.Fprintf(os.Stderr, "upload %s: %.1f / %.1f MiB\n", name, float64(done)/(1<<20), float64(total)/(1<<20))
}
