package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
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
	for k := range p {
		if strings.EqualFold(k, col) {
			return fmt.Errorf("partition column %s given twice", col)
		}
	}
	p[col] = &v
	return nil
}

func runAppend(ctx context.Context, args []string) error {
	fs := newFlags("append", "URL FILE...", appendHelp)
	parts := partitionFlag{}
	fs.Var(parts, "partition", "partition value col=value for every file (repeatable)")
	maxRetry := fs.Duration("max-retry", 30*time.Second, "give up after losing commit races for this long")
	valMem := "256M"
	fs.Var(checkedString{&valMem, func(s string) error { _, err := parseSize(s); return err }},
		"validation-memory", "memory bound for decoding the files before the commit (`SIZE`); a page needing more refuses its file")
	var maxFooter string
	var maxColumns int
	defineParquetLimits(fs, &maxFooter, &maxColumns)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := setParquetLimits(maxFooter, maxColumns); err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageError(fs, "want a table URL and at least one FILE")
	}
	t, closeFn, err := openTable(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeFn()
	c := writeback.New(t, writeback.Options{
		EngineInfo: "deltafs/" + buildVersion().Version, MaxRetry: *maxRetry, Progress: printProgress,
		ValidationBudget: pqfile.NewBudget(sizeOrZero(valMem)),
	})
	files, err := appendFiles(ctx, c, pos[1:], parts)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Append(ctx, files)
	if err != nil {
		return err
	}
	fmt.Println(res.Version)
	c.WaitCheckpoints() // written after the commit (acknowledged above), before the process ends
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
			if pv, err = hivePartitionValues(p, cols); err != nil {
				return nil, err
			}
		}
		if err := checkPartitionValues(p, pv, cols, len(flags) > 0); err != nil {
			return nil, err
		}
		out = append(out, writeback.File{LocalPath: p, Name: filepath.Base(p), PartitionValues: pv})
	}
	return out, nil
}

// checkPartitionValues names every partition column without a value and
// every value for a column that is not one, in the terms of the command
// line (--partition col=VALUE, or col=VALUE/ directories).
func checkPartitionValues(path string, pv map[string]*string, cols []*delta.StructField, fromFlags bool) error {
	var missing, unknown, names []string
	for _, f := range cols {
		names = append(names, f.Name)
		found := false
		for k := range pv {
			found = found || strings.EqualFold(k, f.Name)
		}
		if !found {
			missing = append(missing, "--partition "+f.Name+"=VALUE")
		}
	}
	for k := range pv {
		known := false
		for _, f := range cols {
			known = known || strings.EqualFold(k, f.Name)
		}
		if !known {
			unknown = append(unknown, k)
		}
	}
	if len(missing) == 0 && len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	var why []string
	if len(missing) > 0 {
		hint := "give " + strings.Join(missing, " ")
		if !fromFlags {
			hint += ", or keep the file under col=VALUE/ directories"
		}
		why = append(why, "missing partition values: "+hint)
	}
	if len(unknown) > 0 {
		why = append(why, "not partition columns of the table: "+strings.Join(unknown, ", "))
	}
	partCols := "none"
	if len(names) > 0 {
		partCols = strings.Join(names, ", ")
	}
	return fmt.Errorf("%s: %s (partition columns: %s)", path, strings.Join(why, "; "), partCols)
}

// hivePartitionValues reads col=value directory names of path whose column
// is a partition column of the table (Hive escapes undone, %XX runs as
// UTF-8). A directory naming a partition column whose value cannot be
// decoded (a bad escape, bytes that are not UTF-8) is an error saying why;
// other directories are not the table's business.
func hivePartitionValues(path string, cols []*delta.StructField) (map[string]*string, error) {
	out := map[string]*string{}
	for _, seg := range strings.Split(filepath.ToSlash(filepath.Dir(path)), "/") {
		col, v, err := delta.ParseHiveSegment(seg)
		for _, f := range cols {
			name, _, _ := strings.Cut(seg, "=")
			switch {
			case err != nil && strings.EqualFold(f.Name, name):
				return nil, fmt.Errorf("%s: directory %q: %w", path, seg, err)
			case err == nil && strings.EqualFold(f.Name, col):
				out[f.Name] = v
			}
		}
	}
	return out, nil
}

// printProgress reports uploads of files of 8 MiB or more on stderr.
func printProgress(name string, done, total int64) {
	if total < 8<<20 {
		return
	}
	fmt.Fprintf(os.Stderr, "upload %s: %.1f / %.1f MiB\n", name, float64(done)/(1<<20), float64(total)/(1<<20))
}

// sizeOrZero is parseSize for a flag value its checkedString already
// checked.
func sizeOrZero(s string) int64 {
	n, _ := parseSize(s)
	return n
}

// defineParquetLimits defines the flags of the pqfile.Limits a user may
// need to raise (a footer or schema larger than the defaults); the other
// limits are fixed (operations.md).
func defineParquetLimits(fs *flag.FlagSet, footer *string, columns *int) {
	*footer = "64M"
	fs.Var(checkedString{footer, func(s string) error { _, err := parseSize(s); return err }},
		"max-parquet-footer", "largest Parquet footer read from storage or an inbox (`SIZE`); a larger one is refused naming this flag")
	fs.IntVar(columns, "max-parquet-columns", pqfile.DefaultLimits.MaxSchemaElements,
		"most schema elements (columns and groups) of a Parquet file read from storage or an inbox (`N`)")
}

// setParquetLimits applies the flags of defineParquetLimits.
func setParquetLimits(footer string, columns int) error {
	n, err := parseSize(footer)
	if err != nil {
		return fmt.Errorf("--max-parquet-footer: %w", err)
	}
	if columns <= 0 {
		return fmt.Errorf("--max-parquet-columns: %d is not a positive count", columns)
	}
	pqfile.SetLimits(pqfile.Limits{MaxFooterBytes: n, MaxSchemaElements: columns})
	return nil
}
