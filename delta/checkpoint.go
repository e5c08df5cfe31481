package delta

// Reading a checkpoint into a table state: its parts (Parquet through the
// checkpoint codec, or JSON) and the sidecars a V2 checkpoint names, with
// the storage I/O the codec does not do.

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/delta/checkpoint"
)

// SidecarDir is the directory of V2 checkpoint sidecar files.
const SidecarDir = LogDir + "_sidecars/"

// readCheckpoint reads every part of a checkpoint, and the sidecars a V2
// checkpoint points to, into a fresh state. A checkpoint missing parts or
// sidecars is an error; the caller then falls back to an older one.
func readCheckpoint(ctx context.Context, s Storage, files []LogFile) (*tableState, error) {
	st := newTableState()
	var sidecars []*Sidecar
	var cpMeta *CheckpointMetadata
	apply := func(a *Action) error {
		switch {
		case a.Sidecar != nil:
			sidecars = append(sidecars, a.Sidecar)
		case a.CheckpointMetadata != nil:
			cpMeta = a.CheckpointMetadata
		default:
			applyCheckpointAction(st, a)
		}
		return nil
	}
	for _, f := range files {
		if err := readActionsFile(ctx, s, f.Key, f.Size, f.JSON, apply); err != nil {
			return nil, fmt.Errorf("checkpoint %d: %w", f.Version, err)
		}
	}
	if cpMeta != nil && cpMeta.Version != files[0].Version {
		return nil, corruptf("checkpoint %d: checkpointMetadata says version %d", files[0].Version, cpMeta.Version)
	}
	if files[0].Kind == KindUUIDCheckpoint && cpMeta == nil {
		return nil, corruptf("V2 checkpoint %s has no checkpointMetadata", files[0].Key)
	}
	if err := readSidecars(ctx, s, sidecars, st); err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", files[0].Version, err)
	}
	if st.protocol == nil || st.metadata == nil {
		return nil, corruptf("checkpoint %d has no protocol or metaData", files[0].Version)
	}
	st.bytes = stateActionBytes(st)
	return st, nil
}

// applyCheckpointAction adds one checkpoint row to st. The rows of a
// checkpoint are reconciled already: each (path, dv id) key appears once,
// as an add or a remove, so rows are appended without a lookup.
func applyCheckpointAction(st *tableState, a *Action) {
	switch {
	case a.Add != nil:
		st.files = append(st.files, a.Add)
	case a.Remove != nil:
		st.tombstones = append(st.tombstones, a.Remove)
	default:
		st.applyNonFile(a)
	}
}

// readActionsFile reads a whole JSON or Parquet file of actions, of the
// listed size (0: unknown).
func readActionsFile(ctx context.Context, s Storage, key string, size int64, isJSON bool, fn func(*Action) error) error {
	data, err := readSized(ctx, s, key, size)
	if err != nil {
		return err
	}
	if isJSON {
		return action.Parse(data, fn)
	}
	if err := checkpoint.ReadActions(bytes.NewReader(data), int64(len(data)), fn); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// readSidecars reads the sidecar files concurrently and applies their
// add/remove rows to st.
func readSidecars(ctx context.Context, s Storage, sidecars []*Sidecar, st *tableState) error {
	var mu sync.Mutex // guards st while sidecars are applied
	var wg sync.WaitGroup
	errs := make([]error, len(sidecars))
	sem := make(chan struct{}, 4)
	for i, sc := range sidecars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			key, err := sidecarKey(sc.Path)
			if err != nil {
				errs[i] = err
				return
			}
			var batch []*Action
			err = readActionsFile(ctx, s, key, 0, strings.HasSuffix(key, ".json"), func(a *Action) error {
				if a.Add == nil && a.Remove == nil {
					return nil
				}
				batch = append(batch, a)
				return nil
			})
			if err != nil {
				errs[i] = fmt.Errorf("sidecar %s: %w", sc.Path, err)
				return
			}
			mu.Lock()
			for _, a := range batch {
				applyCheckpointAction(st, a)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sidecarKey resolves a sidecar path: normally a bare file name relative to
// _delta_log/_sidecars/.
func sidecarKey(p string) (string, error) {
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", corruptf("sidecar path %q: %v", p, err)
	}
	if strings.Contains(dec, "://") || strings.HasPrefix(dec, "/") || strings.Contains(dec, "..") {
		return "", corruptf("sidecar path %q is not a file name under %s", p, SidecarDir)
	}
	return SidecarDir + dec, nil
}
