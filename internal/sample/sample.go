// Package sample generates a small Delta table for the demo and for tests:
// written by deltafs's own code (Parquet files with parquet-go, commits
// with put-if-absent, a deletion vector with delta.EncodeDVFile, a
// checkpoint with delta.WriteCheckpoint), with deterministic content.
//
// The table, "orders", is partitioned by region and has these versions,
// one commit each, committed one day apart starting at BaseTime:
//
//	v0  CREATE TABLE: protocol (reader 3, writer 7, deletionVectors), metaData
//	v1  append 2 files (eu, us)                   80 rows
//	v2  append 2 files (apac, us)                150 rows
//	v3  append 1 file (eu)                       200 rows
//	v4  DELETE customer = 'initech' as DVs        160 rows (a DV on each of the 5 files, one DV file)
//	v5  append 1 file (apac), then a checkpoint   200 rows
//	v6  append 2 files (eu, us)                  260 rows
package sample

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deltafs/deltafs/delta"
)

// Table is the name of the sample table's directory under Generate's dir.
const Table = "orders"

// Versions of note.
const (
	// LatestVersion is the newest version of the sample table.
	LatestVersion int64 = 6
	// DeleteVersion is the version whose DELETE is recorded as deletion vectors.
	DeleteVersion int64 = 4
	// CheckpointVersion is the version of the table's checkpoint.
	CheckpointVersion int64 = 5
)

// DeletedCustomer is the customer whose orders DeleteVersion deletes.
const DeletedCustomer = "initech"

// BaseTime is the commit time of version 0; version v is committed v days
// later (commit file modification times, and the commitInfo timestamps).
var BaseTime = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// CommitTime returns the commit time of version v.
func CommitTime(v int64) time.Time { return BaseTime.AddDate(0, 0, int(v)) }

// fileSpec is one data file of an append: orders first .. first+n-1 of a
// region.
type fileSpec struct {
	region string
	first  int64
	n      int64
}

// step is one version of the plan: a create (no files, not delete), an
// append of files, or the DELETE.
type step struct {
	files  []fileSpec
	delete bool
}

var plan = []step{
	{},
	{files: []fileSpec{{"eu", 1, 40}, {"us", 41, 40}}},
	{files: []fileSpec{{"apac", 81, 30}, {"us", 111, 40}}},
	{files: []fileSpec{{"eu", 151, 50}}},
	{delete: true},
	{files: []fileSpec{{"apac", 201, 40}}},
	{files: []fileSpec{{"eu", 241, 30}, {"us", 271, 30}}},
}

// LiveRows returns the number of rows of the table at version v (physical
// rows minus deleted ones), or -1 when v is not a version of the table.
func LiveRows(v int64) int64 {
	if v < 0 || v > LatestVersion {
		return -1
	}
	var live []fileSpec
	rows, deleted := int64(0), int64(0)
	for _, st := range plan[:v+1] {
		for _, f := range st.files {
			live = append(live, f)
			rows += f.n
		}
		if st.delete {
			for _, f := range live {
				deleted += int64(len(deletedPositions(f)))
			}
		}
	}
	return rows - deleted
}

// Generate creates the sample table at dir/Table (see the package doc).
// dir is created if needed; a table already there is an error wrapping
// fs.ErrExist, and nothing is changed. On another error the partial table
// is left for inspection: remove dir/Table before retrying.
func Generate(ctx context.Context, dir string) error {
	root := filepath.Join(dir, Table)
	if _, err := os.Stat(filepath.Join(root, "_delta_log")); err == nil {
		return fmt.Errorf("sample table %s: %w", root, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sample table %s: %w", root, err)
	}
	g := &generator{store: dirStore{root: root}}
	for i, st := range plan {
		v := int64(i)
		if err := g.version(ctx, v, st); err != nil {
			return fmt.Errorf("sample table %s: version %d: %w", root, v, err)
		}
		if v == CheckpointVersion {
			if err := g.checkpoint(ctx, v); err != nil {
				return fmt.Errorf("sample table %s: %w", root, err)
			}
		}
	}
	return nil
}

// generator holds the live files written so far, for the DELETE.
type generator struct {
	store dirStore
	live  []liveFile
}

type liveFile struct {
	spec fileSpec
	add  *delta.Add
}

// version writes the data of one step and commits it as version v.
func (g *generator) version(ctx context.Context, v int64, st step) error {
	var actions []*delta.Action
	var err error
	switch {
	case v == 0:
		actions, err = createActions()
	case st.delete:
		actions, err = g.deleteActions(ctx, v)
	default:
		actions, err = g.appendActions(ctx, v, st.files)
	}
	if err != nil {
		return err
	}
	return g.commit(ctx, v, actions)
}

// checkpoint writes the checkpoint of version v through the engine.
func (g *generator) checkpoint(ctx context.Context, v int64) error {
	snap, err := delta.Open(g.store, delta.Options{}).Snapshot(ctx, v)
	if err != nil {
		return fmt.Errorf("read version %d for its checkpoint: %w", v, err)
	}
	return delta.WriteCheckpoint(ctx, g.store, snap)
}
