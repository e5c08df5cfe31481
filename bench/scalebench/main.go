// Command scalebench measures deltafs on tables of production size (issue
// "Production-size tables"): generated tables of 10^4-10^5 commits and up
// to 10^6 files, every figure a ratio to a baseline measured in the same
// run (a native directory or tree with the same entries, a minimal replay
// of the same log). `make bench-scale` runs it; see docs/benchmarks.md.
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "gen":
		err = runGen(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "replay":
		err = runReplay(os.Args[2:])
	default:
		err = runBench(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}
