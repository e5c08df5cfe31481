//go:build soak

package integration

import (
	"os"
	"strconv"
	"testing"
)

// TestHostileStorageSoak runs the hostile storage test longer: seeds 2..6
// with DELTAFS_HOSTILE_OPS operations each (default 20,000).
func TestHostileStorageSoak(t *testing.T) {
	ops := 20000
	if n, err := strconv.Atoi(os.Getenv("DELTAFS_HOSTILE_OPS")); err == nil && n > 0 {
		ops = n
	}
	for seed := uint64(2); seed <= 6; seed++ {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { runHostile(t, seed, ops) })
	}
}
