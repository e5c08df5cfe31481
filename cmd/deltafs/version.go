package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at link time by `make dist` (-ldflags "-X main.version=... -X
// main.commit=... -X main.buildDate=..."). A plain `go build` leaves them
// empty and buildVersion fills them from the build info Go records.
var (
	version   string
	commit    string
	buildDate string
)

// versionInfo is what `deltafs --version` prints.
type versionInfo struct {
	Version string // release (v0.2.0), Go's pseudo-version of the checkout, or "devel"
	Commit  string // VCS revision, "-dirty" appended for uncommitted changes; "" if unknown
	Date    string // build date (make dist) or commit time (go build); "" if unknown
	DateIs  string // "built" or "committed"
}

// buildVersion returns the link-time values, completed from
// runtime/debug build info: the module version (a tag, or the
// v0.0.0-DATE-HASH pseudo-version go build stamps from the checkout),
// vcs.revision, vcs.modified and vcs.time.
func buildVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Date: buildDate, DateIs: "built"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v.orDevel()
	}
	if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if v.Commit == "" && settings["vcs.revision"] != "" {
		v.Commit = settings["vcs.revision"]
		if settings["vcs.modified"] == "true" {
			v.Commit += "-dirty"
		}
	}
	if v.Date == "" && settings["vcs.time"] != "" {
		v.Date, v.DateIs = settings["vcs.time"], "committed"
	}
	return v.orDevel()
}

func (v versionInfo) orDevel() versionInfo {
	if v.Version == "" {
		v.Version = "devel"
	}
	return v
}

// String is the --version text: one line a script can cut the version
// from, then the details.
func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deltafs %s\n", v.Version)
	if v.Commit != "" {
		fmt.Fprintf(&b, "commit:  %s\n", v.Commit)
	}
	if v.Date != "" {
		fmt.Fprintf(&b, "%-8s %s\n", v.DateIs+":", v.Date)
	}
	fmt.Fprintf(&b, "go:      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}
