//go:build soak

package integration

// The long power-loss series of `make soak` (build tag soak): the same
// appends and losses as the short one in powerloss_test.go, many more.

func init() {
	powerLossAppends = 4000
}
