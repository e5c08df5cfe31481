package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
)

// fstabHelperName is the name under which deltafs acts as mount(8)'s
// helper for the fuse.deltafs type: install it as a symlink,
// ln -s /usr/local/bin/deltafs /sbin/mount.fuse.deltafs.
const fstabHelperName = "mount.fuse.deltafs"

// fstabIgnored are mount(8) options meant for mount(8), systemd or the
// kernel's generic mount flags, which deltafs accepts and ignores.
var fstabIgnored = map[string]bool{
	"defaults": true, "auto": true, "noauto": true, "user": true, "nouser": true, "users": true,
	"owner": true, "group": true, "_netdev": true, "nofail": true, "dev": true, "nodev": true,
	"suid": true, "nosuid": true, "exec": true, "noexec": true, "async": true, "sync": true,
	"atime": true, "noatime": true, "relatime": true, "norelatime": true, "strictatime": true,
	"lazytime": true, "diratime": true, "nodiratime": true, "default_permissions": true,
}

// fstabAliases map mount(8) option names to deltafs flags.
var fstabAliases = map[string]string{"ro": "read-only=true", "rw": "read-only=false"}

// runFstab is main for mount.fuse.deltafs: mount(8) runs it as
// `mount.fuse.deltafs SOURCE MOUNTPOINT [-n] [-s] [-v] -o OPTIONS` and
// waits for it to exit, so it mounts in the background (--daemon) and
// exits 0 once the mount is served.
func runFstab(ctx context.Context, args []string) int {
	margs, err := fstabArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", fstabHelperName, err)
		fmt.Fprintf(os.Stderr, "usage: %s SOURCE MOUNTPOINT -o OPTIONS (see 'deltafs mount --help')\n", fstabHelperName)
		return 1
	}
	pidOnStdout = false
	if err := runMount(ctx, margs); err != nil {
		if err != errUsage {
			fmt.Fprintf(os.Stderr, "%s: %v\n", fstabHelperName, err)
		}
		return 1
	}
	return 0
}

// fstabArgs translates a helper command line into `deltafs mount`
// arguments: every -o option becomes a flag (ro, rw, allow_other,
// cache_size=10G, log_file=..., metrics_addr=..., config=..., any flag
// with '_' for '-'), options for mount(8) and systemd (_netdev, nofail,
// noauto, x-systemd.*, ...) are ignored, and --daemon is added. SOURCE
// is [NAME=]URL, or "none" when config= names the tables.
func fstabArgs(args []string) ([]string, error) {
	var pos, opts []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" || a == "-t":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s needs a value", a)
			}
			if a == "-o" {
				opts = append(opts, strings.Split(args[i+1], ",")...)
			}
			i++
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, strings.Split(a[2:], ",")...)
		case a == "-n" || a == "-s" || a == "-v" || a == "-f" || a == "-i":
			// no mtab, sloppy, verbose, fake, internal-only: nothing to do
		case a == "-r":
			opts = append(opts, "ro")
		case a == "-w":
			opts = append(opts, "rw")
		case strings.HasPrefix(a, "-") && len(a) > 1:
			return nil, fmt.Errorf("unknown argument %q", a)
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return nil, fmt.Errorf("want SOURCE and MOUNTPOINT, got %d arguments", len(pos))
	}
	flags, err := fstabFlags(opts)
	if err != nil {
		return nil, err
	}
	out := append([]string{"--daemon"}, flags...)
	if pos[0] != "none" && pos[0] != "deltafs" {
		out = append(out, pos[0])
	}
	return append(out, pos[1]), nil
}

// fstabFlags turns -o options into --flag=value arguments.
func fstabFlags(opts []string) ([]string, error) {
	known := map[string]bool{}
	var f mountFlags
	fl := newFlags("mount", "", "")
	f.define(fl)
	fl.VisitAll(func(x *flag.Flag) { known[x.Name] = true })
	var out []string
	for _, o := range opts {
		o = strings.TrimSpace(o)
		if o == "" || fstabIgnored[o] || strings.HasPrefix(o, "x-") || strings.HasPrefix(o, "comment=") {
			continue
		}
		if alias, ok := fstabAliases[o]; ok {
			o = alias
		}
		name, value, hasValue := strings.Cut(o, "=")
		name = strings.ReplaceAll(name, "_", "-")
		if !known[name] || name == "daemon" {
			return nil, fmt.Errorf("unknown option %q", o)
		}
		if !hasValue {
			if !isBoolFlag(fl, name) {
				return nil, fmt.Errorf("option %q needs a value (%s=...)", o, o)
			}
			value = "true"
		}
		if err := fl.Set(name, value); err != nil {
			return nil, fmt.Errorf("option %q: %v", o, err)
		}
		out = append(out, "--"+name+"="+value)
	}
	return out, nil
}

// isBoolFlag reports whether the flag name takes no value (-o allow_other).
func isBoolFlag(fl *flag.FlagSet, name string) bool {
	b, ok := fl.Lookup(name).Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
