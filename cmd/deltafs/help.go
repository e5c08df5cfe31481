package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// printFlags prints a command's flags as rclone and gcsfuse do:
// "--name TYPE", the usage below, the default when it is not the zero
// value. (Go's flag package accepts -name and --name alike.)
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		fmt.Fprintf(w, "%s\n      %s", line, strings.ReplaceAll(usage, "\n", "\n      "))
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "map[]" && d != "[]" {
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprintln(w)
	})
}
