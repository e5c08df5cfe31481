//go:build soak

package integration

// The long crash series of `make soak` (build tag soak): the same trials
// as the short one in crash_test.go, many more times in a row.

func init() {
	crashMountTrials = 300
	crashAppendTrials = 200
}
