package blobstore

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/deltafs/deltafs/delta"
)

// escapeLike matches what gocloud's drivers take for an escape they made
// ("__0x2f__"): a key holding one is stored with it escaped again, and a
// name listed with one is reported unescaped.
var escapeLike = regexp.MustCompile(`__0x[0-9a-fA-F]+__`)

// CheckKey implements delta.KeyChecker: gocloud's drivers (v0.47) store
// some keys under an escaped name ("__0x2f__" for the "/" of "../", and so
// on), which another reader of the bucket, or of a local table's
// directory, would not find under the key a log names. The rules are the
// drivers' own: for every driver "../" and anything that looks like an
// escape; file and S3 control characters; file also "//" and a trailing
// "/"; GCS newline and carriage return; Azure control characters, DEL,
// '"', '#', '%', '?', '\\' and a trailing "/". A Store made by New (no
// known driver) applies the file rules.
//
// The root's own prefix counts: a warehouse child whose name would be
// rewritten cannot be addressed at all (see CheckRoot).
func (s *Store) CheckKey(key string) error {
	if why := rewritten(s.driver, s.prefix+key); why != "" {
		return fmt.Errorf("%w: %q on %s: %s", delta.ErrUnstorableKey, key, s.where, why)
	}
	return nil
}

// rewritten says why driver would store key under another name, or "".
func rewritten(driver, key string) string {
	switch {
	case driver == "mem":
		return ""
	case strings.Contains(key, "../"):
		return `it holds "../", which the storage escapes`
	case escapeLike.MatchString(key):
		return `it holds a "__0x..__" sequence, which the storage takes for an escape`
	}
	control := func(r rune) bool { return r < 0x20 }
	switch driver {
	case "gs":
		control = func(r rune) bool { return r == '\n' || r == '\r' }
	case "azblob":
		control = func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune(`"#%?\`, r) }
	}
	switch {
	case strings.ContainsFunc(key, control):
		return "it holds a character the storage escapes (a control character" + map[bool]string{true: ` or one of " # % ? \`}[driver == "azblob"] + ")"
	case (driver == "file" || driver == "") && strings.Contains(key, "//"):
		return `it holds "//", which the storage escapes`
	case driver != "s3" && driver != "gs" && strings.HasSuffix(key, "/"):
		return "it ends in /, which the storage escapes"
	}
	return ""
}

// CheckRoot returns an error wrapping delta.ErrUnstorableKey when the
// root's own name (a warehouse child) would be stored under another name,
// so that no object of the table can be read by its key.
func (s *Store) CheckRoot() error {
	if why := rewritten(s.driver, s.prefix+delta.LogDir+"x.json"); why != "" {
		return fmt.Errorf("%w: the table directory %s: %s", delta.ErrUnstorableKey, s.where, why)
	}
	return nil
}
