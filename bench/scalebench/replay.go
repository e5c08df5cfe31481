package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// runReplay is `scalebench replay DIR VERSION`: the minimal replay that the
// scale figures are ratios to. It shares no code with package delta: it
// lists _delta_log, decodes the newest classic checkpoint at or before the
// version (the add and remove columns a snapshot needs), parses the
// commits after it and reconciles adds and removes by path in a map, then
// prints the number of live files. VERSION -1 is the latest.
func runReplay(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: scalebench replay DIR VERSION")
	}
	v, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		return err
	}
	n, err := minimalReplay(args[0], v)
	if err != nil {
		return err
	}
	fmt.Println(n)
	return nil
}

var (
	commitName = regexp.MustCompile(`^(\d{20})\.json$`)
	cpName     = regexp.MustCompile(`^(\d{20})\.checkpoint\.parquet$`)
)

type floorAdd struct {
	Path             *string            `parquet:"path,optional" json:"path"`
	PartitionValues  map[string]*string `parquet:"partitionValues,optional" json:"partitionValues"`
	Size             *int64             `parquet:"size,optional" json:"size"`
	ModificationTime *int64             `parquet:"modificationTime,optional" json:"modificationTime"`
	Stats            *string            `parquet:"stats,optional" json:"stats"`
}

type floorRemove struct {
	Path *string `parquet:"path,optional" json:"path"`
}

type floorRow struct {
	Add    *floorAdd    `parquet:"add,optional" json:"add"`
	Remove *floorRemove `parquet:"remove,optional" json:"remove"`
}

func minimalReplay(root string, version int64) (int, error) {
	logDir := filepath.Join(root, "_delta_log")
	ents, err := os.ReadDir(logDir)
	if err != nil {
		return 0, err
	}
	var commits []int64
	cp := int64(-1)
	for _, e := range ents {
		if m := commitName.FindStringSubmatch(e.Name()); m != nil {
			c, _ := strconv.ParseInt(m[1], 10, 64)
			commits = append(commits, c)
		} else if m := cpName.FindStringSubmatch(e.Name()); m != nil {
			c, _ := strconv.ParseInt(m[1], 10, 64)
			if (version < 0 || c <= version) && c > cp {
				cp = c
			}
		}
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i] < commits[j] })
	if version < 0 && len(commits) > 0 {
		version = commits[len(commits)-1]
	}
	live := map[string]*floorAdd{}
	if cp >= 0 {
		if err := readFloorCheckpoint(filepath.Join(logDir, fmt.Sprintf("%020d.checkpoint.parquet", cp)), live); err != nil {
			return 0, err
		}
	}
	for _, c := range commits {
		if c <= cp || c > version {
			continue
		}
		data, err := os.ReadFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", c)))
		if err != nil {
			return 0, err
		}
		var adds []*floorAdd
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var r floorRow
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return 0, fmt.Errorf("commit %d: %w", c, err)
			}
			switch {
			case r.Remove != nil && r.Remove.Path != nil:
				delete(live, *r.Remove.Path)
			case r.Add != nil && r.Add.Path != nil:
				adds = append(adds, r.Add)
			}
		}
		for _, a := range adds { // removes before adds within a commit
			live[*a.Path] = a
		}
	}
	return len(live), nil
}

func readFloorCheckpoint(p string, live map[string]*floorAdd) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	r := parquet.NewGenericReader[floorRow](f)
	defer r.Close()
	rows := make([]floorRow, 1024)
	for {
		n, err := r.Read(rows)
		for _, row := range rows[:n] {
			if row.Add != nil && row.Add.Path != nil {
				live[*row.Add.Path] = row.Add
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		clear(rows)
	}
}
