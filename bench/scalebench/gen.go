package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// runGen is `scalebench gen`: write one table, for trying things by hand.
func runGen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	var s scalegen.Spec
	fs.StringVar(&s.Dir, "dir", "", "table root to create")
	fs.IntVar(&s.Commits, "commits", 1000, "number of commits")
	fs.IntVar(&s.FilesPerCommit, "files", 10, "adds per commit")
	fs.IntVar(&s.CheckpointEvery, "checkpoint-every", 100, "a checkpoint every K versions (0: only the last)")
	fs.BoolVar(&s.KeepCheckpoints, "keep-checkpoints", true, "keep every checkpoint (else only the last)")
	fs.IntVar(&s.MaxLive, "max-live", 0, "remove the oldest files beyond this many (0: never)")
	fs.IntVar(&s.Partitions, "partitions", 0, "partition values of column date (0: unpartitioned)")
	fs.BoolVar(&s.ICT, "ict", false, "in-commit timestamps")
	fs.BoolVar(&s.Spark, "spark", false, "commits as Spark writes them: full statistics of 16 columns, Spark's commitInfo")
	fs.IntVar(&s.DeleteEvery, "delete-every", 0, "with -spark: a DELETE every K versions (0: never)")
	fs.IntVar(&s.DeleteFiles, "delete-files", 0, "files each DELETE removes")
	fs.Parse(args)
	if s.Dir == "" {
		return fmt.Errorf("gen: -dir is required")
	}
	start := time.Now()
	res, err := scalegen.Generate(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: %s: %d versions, %d live files, %d checkpoints, in %s\n",
		s.Dir, res.Latest+1, res.LiveFiles, len(res.Checkpoints), time.Since(start).Round(time.Millisecond))
	return nil
}
