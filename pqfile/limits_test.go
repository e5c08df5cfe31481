package pqfile

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit/hostilepq"
)

func limitsFile(n int) hostilepq.File {
	return hostilepq.File{Columns: []hostilepq.Column{{Name: "id", Type: format.Int64, Pages: []hostilepq.Page{hostilepq.Int64Page(false, hostilepq.Ptrs(n, nil))}}}}
}

// TestCheckFooterLimits: each limit refuses the footer that breaks it,
// before parquet-go or the footer decoder see it, naming the limit; the
// 100,000-deep chain of groups (which made parquet-go ask for 80 GB) is
// refused allocating little.
func TestCheckFooterLimits(t *testing.T) {
	deep := limitsFile(10)
	deep.DeepChain = 100_000
	wide := limitsFile(10)
	wide.DeepChain = 1 // elements: root, id, g0, deep
	rows := limitsFile(1000)
	rows.GroupRows = 1_000_000_000_000
	sum := limitsFile(1000)
	sum.FileRows = 999
	groups := limitsFile(10)
	groups.RowGroups = 5
	for name, tc := range map[string]struct {
		file hostilepq.File
		lim  Limits
		want string
		sent error
	}{
		"100,000-deep chain":       {deep, DefaultLimits, "schema nested deeper than 64 levels", ErrLimit},
		"schema elements":          {wide, Limits{MaxSchemaElements: 3}, "schema of more than 3 elements", ErrLimit},
		"10^12 rows over 1,000":    {rows, DefaultLimits, "says 1000000000000 rows, over the limit of 2147483647", ErrLimit},
		"row groups do not add up": {sum, DefaultLimits, "the footer says 999 rows, its row groups 1000", ErrCorrupt},
		"row groups":               {groups, Limits{MaxRowGroups: 4}, "more than 4 row groups", ErrLimit},
		"footer size":              {groups, Limits{MaxFooterBytes: 100}, "over the limit of 100 bytes (--max-parquet-footer)", ErrLimit},
	} {
		t.Run(name, func(t *testing.T) {
			SetLimits(tc.lim)
			t.Cleanup(func() { SetLimits(Limits{}) })
			data := tc.file.Bytes()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			err := CheckFooter(bytes.NewReader(data), int64(len(data)))
			_, ferr := readFooter(bytes.NewReader(data), int64(len(data)))
			runtime.ReadMemStats(&m1)
			for _, e := range []error{err, ferr} {
				if !errors.Is(e, tc.sent) || !strings.Contains(e.Error(), tc.want) {
					t.Errorf("error %v, want %v naming %q", e, tc.sent, tc.want)
				}
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > 4*uint64(len(data))+1<<20 {
				t.Errorf("checking a %d-byte file allocated %d bytes", len(data), a)
			}
		})
	}
	SetLimits(Limits{})
	ok := limitsFile(1000).Bytes()
	if err := CheckFooter(bytes.NewReader(ok), int64(len(ok))); err != nil {
		t.Fatalf("an honest file: %v", err)
	}
}
