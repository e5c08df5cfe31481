package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
)

// printStream is the output loop of ls and history, which print as they
// read (one line per file or per version, in bounded memory): each calls
// emit for every item in order; with asJSON each item is one JSON object
// per line, else text prints the human table through w. Output goes to
// stdout through one 64 KiB buffer, and a failed write or flush (a closed
// pipe, a full disk) is the command's error.
func printStream[T any](asJSON bool, each func(emit func(T) error) error, text func(w io.Writer, each func(emit func(T) error) error) error) error {
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	var err error
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		err = each(func(v T) error { return enc.Encode(v) })
	} else {
		err = text(out, each)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}
