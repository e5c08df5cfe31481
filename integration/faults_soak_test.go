//go:build soak

package integration

import (
	"os"
	"strconv"
	"testing"
)

// TestFaultsSoak runs the fault test over all fixtures with many seeds
// (DELTAFS_FAULT_SEEDS, default 50; seeds 1000 on, apart from the short
// test's seed 1).
func TestFaultsSoak(t *testing.T) {
	n := uint64(50)
	if s, err := strconv.ParseUint(os.Getenv("DELTAFS_FAULT_SEEDS"), 10, 64); err == nil && s > 0 {
		n = s
	}
	runFaults(t, 1000, n)
}
