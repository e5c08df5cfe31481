//go:build linux

package main

import "github.com/deltafs/deltafs/bench/internal/report"

// Short local names for the shared report types and helpers.
type (
	row     = report.Row
	section = report.Section
)

var (
	atLeast    = report.AtLeast
	atMost     = report.AtMost
	throughput = report.Throughput
	round      = report.Round
	median     = report.Median
	loadAvg    = report.LoadAvg
)
