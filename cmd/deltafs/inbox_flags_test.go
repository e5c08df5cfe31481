package main

import (
	"testing"
	"time"

	"github.com/deltafs/deltafs/mount"
)

// TestInboxStaleAfterFlag: --inbox-stale-after defaults to an hour, takes
// a duration, and 0 means never (a negative mount.Config value).
func TestInboxStaleAfterFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"/t", "/mnt"}, mount.DefaultInboxStaleAfter},
		{[]string{"--inbox-stale-after", "10m", "/t", "/mnt"}, 10 * time.Minute},
		{[]string{"--inbox-stale-after=0", "/t", "/mnt"}, -1},
	} {
		cfg, _, err := resolveArgs(t, c.args...)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if cfg.InboxStaleAfter != c.want {
			t.Errorf("%v: InboxStaleAfter %v, want %v", c.args, cfg.InboxStaleAfter, c.want)
		}
	}
	if _, _, err := resolveArgs(t, "--inbox-stale-after", "soon", "/t", "/mnt"); err == nil {
		t.Error("--inbox-stale-after soon: accepted")
	}
}
