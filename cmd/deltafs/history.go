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
	return printStream(*asJSON, each, func(w io.Writer, each func(func(delta.CommitSummary) error) error) error {
		// Columns are padded to fixed widths rather than aligned over the
		// whole output, so that a history of 1,000,000 versions prints as
		// it is read.
		fmt.Fprintf(w, "%-8s  %-30s  %-20s  %s\n", "VERSION", "TIMESTAMP", "OPERATION", "ENGINE")
		return each(func(h delta.CommitSummary) error {
			_, err := fmt.Fprintf(w, "%-8d  %-30s  %-20s  %s\n", h.Version, h.Timestamp.Format(time.RFC3339Nano), h.Operation, h.EngineInfo)
			return err
		})
	})
}
