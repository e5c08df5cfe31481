package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// manCommand is the hidden command that prints deltafs(1), made from the
// help texts the commands print, so the man page cannot drift from them:
// `deltafs manpage > deltafs.1` (make dist does it for the .deb).
const manCommand = "manpage"

func runManPage(ctx context.Context, args []string) int {
	if len(args) != 0 {
		fmt.Fprintf(os.Stderr, "deltafs %s: takes no arguments\n", manCommand)
		return 2
	}
	page, err := manPage(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "deltafs %s: %v\n", manCommand, err)
		return 1
	}
	os.Stdout.WriteString(page)
	return 0
}

// manPage renders the top-level usage and every command's --help as roff
// (man(7) macros).
func manPage(ctx context.Context) (string, error) {
	var b strings.Builder
	v := buildVersion()
	date := v.Date
	if len(date) >= 10 {
		date = date[:10]
	}
	fmt.Fprintf(&b, ".TH DELTAFS 1 %q %q \"User Commands\"\n", date, manSource(v))
	b.WriteString(".SH NAME\ndeltafs, mount.fuse.deltafs \\- Delta Lake tables as directories of snapshots\n")
	b.WriteString(".SH SYNOPSIS\n.B deltafs\n.I command\n[flags] [arguments]\n.br\n")
	b.WriteString(".B mount.fuse.deltafs\n.I SOURCE MOUNTPOINT\n\\-o\n.I OPTIONS\n")
	var top bytes.Buffer
	printUsage(&top)
	b.WriteString(".SH DESCRIPTION\n")
	writeVerbatim(&b, top.String())
	b.WriteString(".SH COMMANDS\n")
	for _, c := range commands {
		help, err := commandHelp(ctx, c)
		if err != nil {
			return "", err
		}
		writeCommand(&b, help)
	}
	b.WriteString(".SH FILES\n")
	b.WriteString(".TP\n/etc/deltafs/\\fINAME\\fR.yaml, /etc/deltafs/\\fINAME\\fR.env\n")
	b.WriteString("config file and credentials of the systemd unit deltafs@\\fINAME\\fR.service\n")
	b.WriteString(".SH SEE ALSO\n.BR mount (8),\n.BR fstab (5),\n.BR fusermount3 (1),\n.BR systemd.service (5)\n")
	return b.String(), nil
}

// manSourceMax is the longest footer source (left of the centred date)
// that leaves a space before the date on an 80-column page.
const manSourceMax = 30

// manSource is the page footer's source: "deltafs VERSION", or, for a
// version too long to leave room for the date (an untagged build's
// 0.0.0~git20261201112532.g1a2b3c4.dirty, a Go pseudo-version), its
// release part and commit.
func manSource(v versionInfo) string {
	s := "deltafs " + v.Version
	if len(s) <= manSourceMax {
		return s
	}
	base := v.Version
	if i := strings.IndexAny(base, "+~-"); i > 0 {
		base = base[:i] // a Go pseudo-version's -DATE-HASH, or our +git/~git part
	}
	commit := v.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		return "deltafs " + base
	}
	return "deltafs " + base + " (" + commit + ")"
}

// commandHelp runs c with --help and returns what it prints.
func commandHelp(ctx context.Context, c command) (string, error) {
	var buf bytes.Buffer
	saved := helpOut
	helpOut = &buf
	defer func() { helpOut = saved }()
	if err := c.run(ctx, []string{"--help"}); err != errHelp {
		return "", fmt.Errorf("%s --help: %v (want the help)", c.name, err)
	}
	return buf.String(), nil
}

// writeCommand writes one command's help: its usage line as a
// subsection, the text verbatim, each flag as a tagged paragraph.
func writeCommand(w io.StringWriter, help string) {
	usage, rest, _ := strings.Cut(help, "\n")
	w.WriteString(".SS \"" + roffEscape(strings.TrimPrefix(usage, "Usage: ")) + "\"\n")
	text, flags, _ := strings.Cut(rest, "\nFlags:\n")
	writeVerbatim(w, strings.Trim(text, "\n"))
	for _, line := range strings.Split(strings.TrimRight(flags, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "  --"):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "  "), " ")
			w.WriteString(".TP\n\\fB" + roffEscape(name) + "\\fR")
			if typ != "" {
				w.WriteString(" \\fI" + roffEscape(typ) + "\\fR")
			}
			w.WriteString("\n")
		case strings.TrimSpace(line) != "":
			w.WriteString(roffLine(strings.TrimSpace(line)) + "\n")
		}
	}
}

// writeVerbatim writes text as a no-fill block, so its examples and
// tables keep their layout.
func writeVerbatim(w io.StringWriter, text string) {
	w.WriteString(".PP\n.nf\n")
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		w.WriteString(roffLine(line) + "\n")
	}
	w.WriteString(".fi\n")
}

// roffLine escapes one line of text; an empty line stays a blank line.
func roffLine(s string) string {
	s = roffEscape(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffEscape escapes backslashes and makes '-' a minus, so copied
// commands and flags stay ASCII.
func roffEscape(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`, `"`, `\(dq`).Replace(s)
}
