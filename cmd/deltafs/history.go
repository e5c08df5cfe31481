package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"
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
		fs.Usage()
		return errUsage
	}
	t, closeFn, err := openTable(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeFn()
	hist, err := t.History(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, h := range hist {
			if err := enc.Encode(h); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tTIMESTAMP\tOPERATION\tENGINE")
	for _, h := range hist {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", h.Version, h.Timestamp.Format(time.RFC3339Nano), h.Operation, h.EngineInfo)
	}
	return w.Flush()
}
