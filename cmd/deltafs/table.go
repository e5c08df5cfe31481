package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
)

// errUsage reports a usage error already printed by the flag set.
var errUsage = errors.New("usage")

// errHelp reports help asked for and printed: the command exits 0.
var errHelp = errors.New("help")

// helpOut is where help asked for goes (the man page generator reads it).
var helpOut io.Writer = os.Stdout

// newFlags returns a flag set whose --help prints the usage text and
// examples of a command.
func newFlags(name, args, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: deltafs %s [flags] %s\n\n%s\nFlags:\n", name, args, help)
		printFlags(fs.Output(), fs)
	}
	return fs
}

// usageError says what is wrong with the arguments, then prints the
// usage (both on stderr).
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "deltafs %s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}

// parseFlags parses flags that may come before or after the positional
// arguments (deltafs ls URL --json); after "--" every argument is
// positional. Asked for (-h, --help), the help
// goes to stdout and the command exits 0 (errHelp); after a bad flag it
// goes to stderr.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err == flag.ErrHelp {
			out := fs.Output()
			fs.SetOutput(helpOut)
			usage()
			fs.SetOutput(out)
			return nil, errHelp
		} else if err != nil {
			usage()
			return nil, errUsage
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil // "--" ends the flags: the rest are arguments, whatever they look like
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// splitSpec splits URL[@SPEC]. The spec is the text after the last '@' of
// the last path element, so '@' elsewhere in a URL (user info) is kept.
func splitSpec(arg string) (location, spec string) {
	slash := strings.LastIndex(arg, "/")
	at := strings.LastIndex(arg, "@")
	if at > slash && at >= 0 {
		return arg[:at], arg[at+1:]
	}
	return arg, "latest"
}

// openTable opens the table at a path or URL.
func openTable(ctx context.Context, location string) (*delta.Table, func(), error) {
	if !strings.Contains(location, "://") {
		if err := checkNotInMount(location); err != nil {
			return nil, nil, err
		}
	}
	st, err := blobstore.Open(ctx, location)
	if err != nil {
		return nil, nil, err
	}
	return delta.Open(st, delta.Options{}), func() { st.Close() }, nil
}
