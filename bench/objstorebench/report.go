package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// target is a bound on a ratio: at least (ge) or at most v; zero is none.
type target struct {
	ge bool
	v  float64
}

func atLeast(v float64) target { return target{ge: true, v: v} }

func (t target) String() string {
	switch {
	case t.v == 0:
		return ""
	case t.ge:
		return fmt.Sprintf(">= %.2fx", t.v)
	default:
		return fmt.Sprintf("<= %.2fx", t.v)
	}
}

func (t target) verdict(r float64) string {
	switch {
	case t.v == 0:
		return ""
	case t.ge && r >= t.v, !t.ge && r <= t.v:
		return "met"
	default:
		return "NOT MET"
	}
}

// row is one line of the report: a figure of one config, its ratio to the
// section's baseline (measured in the same run) and the target.
type row struct {
	figure, cfg, value string
	ratio              float64
	target             target
}

// section is a group of rows sharing what the ratio means.
type section struct {
	title string
	ratio string // what the ratio column is
	rows  []row
}

func printReport(w io.Writer, sections []section) {
	for _, s := range sections {
		fmt.Fprintf(w, "\n== %s\n   ratio: %s\n", s.title, s.ratio)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "   figure\tconfig\tmedian\tratio\ttarget\tverdict")
		for _, r := range s.rows {
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%.2fx\t%s\t%s\n", r.figure, r.cfg, r.value, r.ratio, r.target, r.target.verdict(r.ratio))
		}
		tw.Flush()
	}
}

// throughput formats a read of size bytes taking d.
func throughput(size int64, d time.Duration) string {
	return fmt.Sprintf("%s (%.0f MiB/s)", round(d), float64(size)/(1<<20)/d.Seconds())
}

// round shortens a duration for display.
func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(100 * time.Nanosecond).String()
	}
}

// median returns the median of ds (0 for none).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
