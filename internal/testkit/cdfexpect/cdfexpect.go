// Package cdfexpect holds the change rows other Delta implementations'
// tests expect of the shared fixtures' CDF tables, for the tests of
// deltafs changes and of the mount's @changes tree, and the comparison
// of rows printed by Arrow (their tests) and DuckDB (ours).
package cdfexpect

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

//go:embed kernel-cdf.json
var kernelJSON []byte

// Case is one expectation: the change rows of a fixture's versions
// From..To (To nil: to the latest) in the given columns.
type Case struct {
	Test    string     `json:"test"`
	Fixture string     `json:"fixture"`
	From    int64      `json:"from"`
	To      *int64     `json:"to"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// Kernel returns delta-kernel-rs's expectations (kernel-cdf.json: its
// source field cites the test file and commit they were copied from).
func Kernel() ([]Case, error) {
	var k struct {
		Cases []Case `json:"cases"`
	}
	err := json.Unmarshal(kernelJSON, &k)
	return k.Cases, err
}

// Select is the SQL column list of c's columns, quoted.
func (c Case) Select() string {
	cols := make([]string, len(c.Columns))
	for i, col := range c.Columns {
		cols[i] = `"` + strings.ReplaceAll(col, `"`, `""`) + `"`
	}
	return strings.Join(cols, ", ")
}

// Want is c's rows as Normalize gives them.
func (c Case) Want() []string {
	rows := make([]string, len(c.Rows))
	for i, r := range c.Rows {
		rows[i] = strings.Join(r, "|")
	}
	return Normalize(rows)
}

// Normalize sorts rows of "|"-joined cells, each cell as Arrow's and
// DuckDB's printers agree on it: null as empty (Arrow prints nothing),
// numbers by value (100.0 and 100), struct fields without DuckDB's quotes.
func Normalize(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		cells := strings.Split(r, "|")
		for j, c := range cells {
			switch {
			case c == "null":
				c = ""
			case strings.HasPrefix(c, "{"):
				c = strings.ReplaceAll(c, "'", "")
			default:
				if f, err := strconv.ParseFloat(c, 64); err == nil {
					c = strconv.FormatFloat(f, 'g', -1, 64)
				}
			}
			cells[j] = c
		}
		out[i] = strings.Join(cells, "|")
	}
	slices.Sort(out)
	return out
}
