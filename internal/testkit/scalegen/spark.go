package scalegen

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// The Spark shape (Spec.Spark): what a table written by Spark's Delta
// writer looks like in its log. Each add carries statistics of every
// column (numRecords, minValues, maxValues, nullCount: Spark collects them
// for the first 32 columns), the commitInfo carries Spark's fields
// (readVersion, isolationLevel, operationMetrics, engineInfo, txnId), and
// there is no in-commit timestamp: a version's time is its commit file's
// modification time. Ten adds make a commit of about 7 KB, the size of a
// Spark append of ten files to a table of nine columns.

// sparkColumn is one column of the Spark-shaped table's schema.
type sparkColumn struct{ name, typ string }

var sparkColumns = []sparkColumn{
	{"event_id", "long"}, {"user_id", "long"}, {"event_type", "string"}, {"country", "string"},
	{"price", "double"}, {"quantity", "integer"}, {"event_time", "timestamp"}, {"event_date", "date"},
	{"is_test", "boolean"},
}

// sparkWords are the string columns' values.
var sparkWords = []string{"android", "click", "DE", "ios", "purchase", "spring_sale", "US", "view", "web", "winter"}

func sparkSchema() string {
	var b strings.Builder
	b.WriteString(`{"type":"struct","fields":[`)
	for i, c := range sparkColumns {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":%q,"type":%q,"nullable":true,"metadata":{}}`, c.name, c.typ)
	}
	b.WriteString(`]}`)
	return b.String()
}

// sparkStats is the stats JSON of f as Spark writes it: every column's
// min and max (booleans have none) and null count. The values are derived
// from the file alone, so that a commit and a checkpoint agree.
func (f file) sparkStats() string {
	h := fnv.New64a()
	h.Write([]byte(f.path))
	seed := h.Sum64()
	r := rand.New(rand.NewPCG(seed, 3))
	var mins, maxs, nulls strings.Builder
	for i, c := range sparkColumns {
		sep := ","
		if i == 0 {
			sep = ""
		}
		if c.typ != "boolean" {
			lo, hi := sparkValue(r, c.typ, f, false), sparkValue(r, c.typ, f, true)
			if mins.Len() > 0 {
				mins.WriteByte(',')
				maxs.WriteByte(',')
			}
			fmt.Fprintf(&mins, "%q:%s", c.name, lo)
			fmt.Fprintf(&maxs, "%q:%s", c.name, hi)
		}
		fmt.Fprintf(&nulls, "%s%q:%d", sep, c.name, r.Int64N(f.rows/50+1))
	}
	return fmt.Sprintf(`{"numRecords":%d,"minValues":{%s},"maxValues":{%s},"nullCount":{%s}}`, f.rows, mins.String(), maxs.String(), nulls.String())
}

// sparkValue is a min (or max) statistic of a column of type typ.
func sparkValue(r *rand.Rand, typ string, f file, high bool) string {
	base := f.mod / 1000
	switch typ {
	case "long":
		if high {
			return strconv.FormatInt(base+f.rows+r.Int64N(1_000_000), 10)
		}
		return strconv.FormatInt(base-r.Int64N(1_000_000), 10)
	case "integer":
		if high {
			return strconv.FormatInt(10+r.Int64N(90), 10)
		}
		return strconv.FormatInt(1+r.Int64N(9), 10)
	case "double", "float":
		if high {
			return strconv.FormatFloat(100+r.Float64()*900, 'f', 2, 64)
		}
		return strconv.FormatFloat(r.Float64()*100, 'f', 2, 64)
	case "timestamp":
		ms := f.mod - r.Int64N(3_600_000)
		if high {
			ms = f.mod
		}
		return `"` + msTime(ms).Format("2006-01-02T15:04:05.000Z") + `"`
	case "date":
		return `"` + msTime(f.mod).Format("2006-01-02") + `"`
	}
	// strings (Spark keeps at most 32 characters of a bound)
	i := r.IntN(len(sparkWords) / 2)
	if high {
		i += len(sparkWords) / 2
	}
	return `"` + sparkWords[i] + `"`
}

// sparkCommitInfo is the commitInfo Spark writes for an append (or a
// DELETE, when the commit removes files).
func sparkCommitInfo(v, ts int64, adds, removed []file) map[string]any {
	var rows, bytes int64
	for _, f := range adds {
		rows += f.rows
		bytes += f.size
	}
	op, params := "WRITE", map[string]string{"mode": "Append", "partitionBy": "[]"}
	metrics := map[string]string{"numFiles": strconv.Itoa(len(adds)), "numOutputRows": strconv.FormatInt(rows, 10), "numOutputBytes": strconv.FormatInt(bytes, 10)}
	if len(removed) > 0 {
		op, params = "DELETE", map[string]string{"predicate": `["(event_date#1234 < 2024-01-01)"]`}
		metrics = map[string]string{"numRemovedFiles": strconv.Itoa(len(removed)), "numAddedFiles": strconv.Itoa(len(adds)),
			"numDeletedRows": strconv.FormatInt(rows/3, 10), "numCopiedRows": strconv.FormatInt(rows, 10),
			"executionTimeMs": "4213", "scanTimeMs": "1876", "rewriteTimeMs": "2301"}
	}
	ci := map[string]any{"timestamp": ts, "operation": op, "operationParameters": params,
		"isolationLevel": "Serializable", "isBlindAppend": len(removed) == 0, "operationMetrics": metrics,
		"engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0", "txnId": fmt.Sprintf("%08x-1f2e-4d3c-9b8a-%012x", uint32(v*2654435761), v)}
	if v > 0 {
		ci["readVersion"] = v - 1
	}
	return ci
}

// removeRandom removes n random files of live (a DELETE rewriting them
// without their deleted rows is an add each, left out here).
func removeRandom(r *rand.Rand, live []file, n int) (rest, removed []file) {
	for k := 0; k < n && len(live) > 0; k++ {
		i := r.IntN(len(live))
		removed = append(removed, live[i])
		live[i] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	return live, removed
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
