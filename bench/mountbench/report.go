//go:build linux

package main

import "github.com/deltafs/deltafs/bench/internal/report"

// Short local names for the shared report types and helpers.
type (
	target  = report.Target
	row     = report.Row
	section = report.Section
)

var (
	noTarget   = report.None
	atLeast    = report.AtLeast
	atMost     = report.AtMost
	throughput = report.Throughput
	round      = report.Round
	loadAvg    = report.LoadAvg
)
