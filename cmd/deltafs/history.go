package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/deltafs/deltafs/delta"
)

const historyHelp = `List the versions of a table, oldest first, with each commit's time,
operation and engine (from its commitInfo).

Examples:
  deltafs history ./orders
  deltafs history ./orders --json | jq 'select(.operation == "DELETE")'
`

func runHistory(ctx context.Context, args []string) error {
	fs := newFlags("history", "URL", historyHelp)
	asJSON := fs.Bool("json", false, "print one JSON object per version")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs, "want one table URL, got %d arguments", len(pos))
	}
	t, closeFn, err := openTable(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeFn()
	each := func(emit func(delta.CommitSummary) error) error { return t.HistoryEach(ctx, 0, -1, emit) }
	return printStream(*asJSON, each, printHistory)
}

// historyOpWidth fits Delta's longest operation names ("CREATE OR REPLACE
// TABLE AS SELECT"); a longer one shifts only its own line's last column.
const historyOpWidth = 34

// printHistory prints the human table. Columns are padded to fixed widths
// rather than aligned over the whole output, so that a history of
// 1,000,000 versions prints as it is read; the header goes out with the
// first line, so that a table that cannot be read prints only the error.
func printHistory(w io.Writer, each func(func(delta.CommitSummary) error) error) error {
	const format = "%-8v  %-30s  %-*s  %s\n"
	header := func() { fmt.Fprintf(w, format, "VERSION", "TIMESTAMP", historyOpWidth, "OPERATION", "ENGINE") }
	lines := 0
	err := each(func(h delta.CommitSummary) error {
		if lines++; lines == 1 {
			header()
		}
		_, err := fmt.Fprintf(w, format, h.Version, h.Timestamp.Format(time.RFC3339Nano), historyOpWidth, h.Operation, h.EngineInfo)
		return err
	})
	if err == nil && lines == 0 {
		header()
	}
	return err
}
