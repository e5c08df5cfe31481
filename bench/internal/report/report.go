// Package report prints the benchmark programs' results: figures grouped
// in sections, each with its ratio to a baseline measured in the same run
// and the target for it, plus the machine's load, which moves
// every figure on shared CPUs.
package report

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Target is a bound on a ratio: at least (ge) or at most v; zero is none.
type Target struct {
	ge bool
	v  float64
}

// None is no target.
var None = Target{}

// AtLeast is a target ratio >= v.
func AtLeast(v float64) Target { return Target{ge: true, v: v} }

// AtMost is a target ratio <= v.
func AtMost(v float64) Target { return Target{v: v} }

func (t Target) String() string {
	switch {
	case t.v == 0:
		return ""
	case t.ge:
		return fmt.Sprintf(">= %.2fx", t.v)
	default:
		return fmt.Sprintf("<= %.2fx", t.v)
	}
}

// Verdict says whether ratio r meets the target ("" when there is none).
func (t Target) Verdict(r float64) string {
	switch {
	case t.v == 0:
		return ""
	case t.ge && r >= t.v, !t.ge && r <= t.v:
		return "met"
	default:
		return "NOT MET"
	}
}

// Row is one line of a report: a figure of one config, its ratio to the
// section's baseline and the target. Note is an optional reference
// figure (the section's NoteHeader names it).
type Row struct {
	Figure, Config, Value string
	Ratio                 float64
	Target                Target
	Note                  string
}

// Section is a group of rows sharing what the ratio means.
type Section struct {
	Title      string
	Ratio      string // what the ratio column is
	NoteHeader string // header of the Note column; "" drops the column
	Rows       []Row
}

// Print writes the sections as aligned tables.
func Print(w io.Writer, sections []Section) {
	for _, s := range sections {
		fmt.Fprintf(w, "\n== %s\n   ratio: %s\n", s.Title, s.Ratio)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header := "   figure\tconfig\tmedian\tratio\ttarget\tverdict"
		if s.NoteHeader != "" {
			header += "\t" + s.NoteHeader
		}
		fmt.Fprintln(tw, header)
		for _, r := range s.Rows {
			line := fmt.Sprintf("   %s\t%s\t%s\t%.2fx\t%s\t%s", r.Figure, r.Config, r.Value, r.Ratio, r.Target, r.Target.Verdict(r.Ratio))
			if s.NoteHeader != "" {
				line += "\t" + r.Note
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
}

// Throughput formats a read of size bytes taking d.
func Throughput(size int64, d time.Duration) string {
	return fmt.Sprintf("%s (%.0f MiB/s)", Round(d), float64(size)/(1<<20)/d.Seconds())
}

// Round shortens a duration for display.
func Round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(100 * time.Nanosecond).String()
	}
}

// Median returns the median of ds (0 for none).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// LoadAvg returns the 1, 5 and 15 minute load averages.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
