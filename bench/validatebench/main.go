// Command validatebench measures the validation of an appended file (every
// page decoded within the validation budget) against DuckDB
// reading all the columns of the same file, in the same run: it writes a
// VALIDATEBENCH_MIB (default 256) MiB Parquet file and a table for it,
// then times writeback's Validate in a child process (its peak RSS read
// from /proc) and a DuckDB aggregate over every column
// (scripts/duckdb-query.mjs, less a node start-up measured alike), three
// times each, and prints medians and their ratio with the load average.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/pqfile"
	"github.com/deltafs/deltafs/writeback"
)

type row struct {
	ID   int64   `parquet:"id"`
	X    float64 `parquet:"x"`
	S    string  `parquet:"s"`
	Opt  *int64  `parquet:"opt,optional"`
	Cat  string  `parquet:"cat,dict"`
	Day  int32   `parquet:"day"`
	Flag bool    `parquet:"flag"`
}

const schema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"x","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"opt","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"cat","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"day","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"flag","type":"boolean","nullable":true,"metadata":{}}]}`

func main() {
	if len(os.Args) == 4 && os.Args[1] == "validate" {
		validate(os.Args[2], os.Args[3])
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "validatebench:", err)
		os.Exit(1)
	}
}

func run() error {
	mib := 256
	if v, err := strconv.Atoi(os.Getenv("VALIDATEBENCH_MIB")); err == nil && v > 0 {
		mib = v
	}
	dir, err := os.MkdirTemp("", "validatebench-")
	if err != nil {
		return err
	}
	if keep := os.Getenv("VALIDATEBENCH_KEEP"); keep != "" {
		dir = keep
		os.MkdirAll(dir, 0o755)
	} else {
		defer os.RemoveAll(dir)
	}
	table := filepath.Join(dir, "table")
	file := filepath.Join(dir, "in.parquet")
	if err := writeTable(table); err != nil {
		return err
	}
	rows, err := writeFile(file, int64(mib)<<20)
	if err != nil {
		return err
	}
	fi, _ := os.Stat(file)
	fmt.Printf("file: %d MiB, %d rows, snappy, 7 columns (long, double, string, nullable long, dictionary string, int, boolean)\n", fi.Size()>>20, rows)
	self, _ := os.Executable()
	var val, duck, start []float64
	var hwm []int64
	q := fmt.Sprintf("SELECT count(*), min(id), max(id), min(x), max(x), min(s), max(s), count(opt), min(opt), max(opt), min(cat), max(cat), min(day), max(day), count(flag) FROM read_parquet('%s')", file)
	for range 3 {
		t0 := time.Now()
		out, err := exec.Command(self, "validate", table, file).CombinedOutput()
		if err != nil {
			return fmt.Errorf("validate: %v: %s", err, out)
		}
		val = append(val, time.Since(t0).Seconds())
		kb, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		hwm = append(hwm, kb)
		d, err := duckdb(q)
		if err != nil {
			return err
		}
		s, err := duckdb("SELECT 1")
		if err != nil {
			return err
		}
		duck, start = append(duck, d), append(start, s)
	}
	mv, md, ms := median(val), median(duck), median(start)
	fmt.Printf("load average: %s", loadavg())
	fmt.Printf("validation (child process, whole Validate): median %.2f s %v, peak RSS %d MiB (max of %v KiB); budget %d MiB\n", mv, val, slices.Max(hwm)>>10, hwm, pqfile.DefaultProveMemory>>20)
	fmt.Printf("duckdb all columns: median %.2f s %v, node start-up %.2f s: %.2f s\n", md, duck, ms, md-ms)
	fmt.Printf("ratio validation / duckdb: %.2fx (%.2fx counting DuckDB's start-up)\n", mv/(md-ms), mv/md)
	return nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

func duckdb(sql string) (float64, error) {
	q, _ := json.Marshal([]string{sql})
	cmd := exec.Command("node", "../../scripts/duckdb-query.mjs")
	cmd.Dir = ".tools/node"
	cmd.Stdin = strings.NewReader(string(q))
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), `"error"`) {
		return 0, fmt.Errorf("duckdb: %v: %s", err, out)
	}
	return time.Since(t0).Seconds(), nil
}

func writeTable(dir string) error {
	meta, _ := json.Marshal(map[string]any{"id": "00000000-0000-0000-0000-0000000000be", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": schema, "partitionColumns": []string{}, "configuration": map[string]string{"delta.dataSkippingNumIndexedCols": "-1"}, "createdTime": 1})
	body := `{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}` + "\n" + `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" + `{"metaData":` + string(meta) + "}\n"
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, filepath.FromSlash(delta.CommitKey(0))), []byte(body), 0o644)
}

func writeFile(path string, size int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := parquet.NewGenericWriter[row](f, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(1<<20))
	r := rand.New(rand.NewPCG(1, 2))
	cats := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	buf := make([]row, 4096)
	var n int64
	letters := "abcdefghijklmnopqrstuvwxyz0123456789"
	for {
		fi, err := f.Stat()
		if err != nil {
			return 0, err
		}
		if fi.Size() >= size {
			break
		}
		for i := range buf {
			b := make([]byte, 12+r.IntN(24))
			for k := range b {
				b[k] = letters[r.IntN(len(letters))]
			}
			buf[i] = row{ID: n, X: r.NormFloat64(), S: string(b), Cat: cats[r.IntN(len(cats))], Day: int32(19000 + r.IntN(2000)), Flag: r.IntN(2) == 0}
			if r.IntN(10) != 0 {
				v := r.Int64N(1 << 40)
				buf[i].Opt = &v
			}
			n++
		}
		if _, err := w.Write(buf); err != nil {
			return 0, err
		}
		if n%(1<<20) == 0 { // a row group was flushed: the file grew
			if err := w.Flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, w.Close()
}

// validate is the child: one Validate, then its peak RSS in KiB.
func validate(table, file string) {
	ctx := context.Background()
	st, err := blobstore.Open(ctx, table)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if prof := os.Getenv("VALIDATEBENCH_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	c := writeback.New(delta.Open(st, delta.Options{}), writeback.Options{})
	if err := c.Validate(ctx, writeback.File{LocalPath: file, Name: "in.parquet"}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	pprof.StopCPUProfile()
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Println(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
}
