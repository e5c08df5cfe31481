package csi

// What the plugin records of each published target, so that a later plugin
// process can unpublish it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// record is what the plugin keeps of one published target, in
// STATE/volumes/<key>.json, so that a plugin started later (a restart,
// an upgrade) can unpublish what an earlier one published. It is
// written once the mount is served and removed once it is gone.
type record struct {
	VolumeID  string    `json:"volumeId"`
	Target    string    `json:"target"`
	PID       int       `json:"pid"`
	ReadOnly  bool      `json:"readOnly"`
	Source    string    `json:"source,omitempty"`
	Published time.Time `json:"published"`
}

func (d *Driver) recordPath(target string) string {
	return filepath.Join(d.opts.StateDir, "volumes", targetKey(target)+".json")
}

// volumeDir is target's own directory (Volume.Dir).
func (d *Driver) volumeDir(target string) string {
	return filepath.Join(d.opts.StateDir, "volumes", targetKey(target))
}

// loadRecord returns target's record, or nil if it has none.
func (d *Driver) loadRecord(target string) (*record, error) {
	data, err := os.ReadFile(d.recordPath(target))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("record of %s: %w", target, err)
	}
	return &r, nil
}

// saveRecord writes r atomically (temp file, rename).
func (d *Driver) saveRecord(r *record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := d.recordPath(r.Target)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// removeRecord drops target's record and directory.
func (d *Driver) removeRecord(target string) error {
	if err := os.Remove(d.recordPath(target)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.RemoveAll(d.volumeDir(target))
}

// records lists every record (published targets).
func (d *Driver) records() ([]*record, error) {
	ents, err := os.ReadDir(filepath.Join(d.opts.StateDir, "volumes"))
	if err != nil {
		return nil, err
	}
	var out []*record
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d.opts.StateDir, "volumes", e.Name()))
		if err != nil {
			return out, err
		}
		var r record
		if err := json.Unmarshal(data, &r); err != nil {
			return out, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, &r)
	}
	return out, nil
}
