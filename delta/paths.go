package delta

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// ResolvePath turns a path as written in the log (add.path, remove.path, a
// `p` deletion vector's URI) into a key of the Storage rooted at tableRoot.
//
// logPath is URI-decoded exactly once with path semantics (url.PathUnescape:
// "%2520" becomes "%20", "+" stays "+"). A relative path, once decoded, is
// the key. An absolute one (an absolute filesystem path, "file:/...",
// "file:///...", "s3://bucket/...", ...) must name a location under
// tableRoot, which is a local absolute path or a URL such as
// "s3://bucket/prefix" (query ignored; s3, s3a and s3n are the same store);
// the key is its remainder relative to the root.
//
// Errors: a malformed path (bad %-escape, empty) wraps ErrCorruptLog. A
// well-formed path this engine cannot serve — a location outside the table
// root (a shallow clone, a table written elsewhere and moved), or a key with
// a "." or ".." segment, holding NUL, or starting with "/" — wraps ErrUnsupportedFeature:
// such a file is legal Delta but cannot be reached through a Storage rooted
// at the table.
func ResolvePath(tableRoot, logPath string) (key string, err error) {
	if logPath == "" {
		return "", corruptf("empty file path")
	}
	scheme, authority, rawPath, isAbs := splitLogURI(logPath)
	decoded := rawPath
	if strings.IndexByte(rawPath, '%') >= 0 { // most paths have nothing to decode
		var err error
		if decoded, err = url.PathUnescape(rawPath); err != nil {
			return "", corruptf("path %q: %v", logPath, err)
		}
	}
	if !isAbs {
		return checkKey(logPath, decoded)
	}
	root, err := parseRoot(tableRoot)
	if err != nil {
		return "", err
	}
	if !sameStore(root, scheme, authority) {
		return "", outsideRoot(logPath, tableRoot)
	}
	rel, ok := underRoot(root.path, decoded)
	if !ok {
		return "", outsideRoot(logPath, tableRoot)
	}
	return checkKey(logPath, rel)
}

// rootLoc is a parsed table root: a store (scheme + authority) and a clean
// absolute '/'-separated path within it.
type rootLoc struct {
	scheme, authority, path string
}

// splitLogURI splits a log path into scheme, authority and the still-encoded
// path. isAbs reports a URI with a scheme or an absolute filesystem path; a
// bare absolute path gets scheme "file".
func splitLogURI(p string) (scheme, authority, rawPath string, isAbs bool) {
	if strings.HasPrefix(p, "/") {
		return "file", "", p, true
	}
	scheme, rest, ok := cutScheme(p)
	if !ok {
		return "", "", p, false
	}
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return scheme, rest, "/", true
		}
		return scheme, rest[:i], rest[i:], true
	}
	return scheme, "", rest, true
}

// cutScheme splits "scheme:rest" when p starts with an RFC 3986 scheme of at
// least two characters (so that a Windows drive letter is not a scheme).
// Writers escape ':' in relative paths, so "a:b" in a log names a URI.
func cutScheme(p string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(p, ':')
	if i < 2 || strings.ContainsAny(p[:i], "/%") {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := p[j]
		isAlpha := (c|0x20) >= 'a' && (c|0x20) <= 'z'
		if !isAlpha && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", false
		}
	}
	return strings.ToLower(p[:i]), p[i+1:], true
}

// parseRoot parses the table root given by the user or Storage.String().
func parseRoot(tableRoot string) (rootLoc, error) {
	if !strings.Contains(tableRoot, "://") {
		abs, err := filepath.Abs(tableRoot)
		if err != nil {
			return rootLoc{}, fmt.Errorf("table root %q: %w", tableRoot, err)
		}
		return rootLoc{scheme: "file", path: path.Clean(filepath.ToSlash(abs))}, nil
	}
	u, err := url.Parse(tableRoot)
	if err != nil {
		return rootLoc{}, fmt.Errorf("table root %q: %w", tableRoot, err)
	}
	return rootLoc{
		scheme:    strings.ToLower(u.Scheme),
		authority: u.Host,
		path:      path.Clean("/" + u.Path),
	}, nil
}

// sameStore reports whether scheme://authority names the root's store.
func sameStore(root rootLoc, scheme, authority string) bool {
	norm := func(s string) string {
		switch s {
		case "s3a", "s3n":
			return "s3"
		}
		return s
	}
	if norm(root.scheme) != norm(scheme) {
		return false
	}
	if scheme == "file" {
		return (authority == "" || authority == "localhost") &&
			(root.authority == "" || root.authority == "localhost")
	}
	return strings.EqualFold(root.authority, authority)
}

// underRoot returns p relative to rootPath when p lies strictly under it.
func underRoot(rootPath, p string) (string, bool) {
	p = path.Clean("/" + p)
	if rootPath == "/" {
		return strings.TrimPrefix(p, "/"), p != "/"
	}
	rel, ok := strings.CutPrefix(p, rootPath+"/")
	return rel, ok && rel != ""
}

// checkKey rejects decoded keys that would leave the table root or are not
// plain relative keys.
func checkKey(logPath, key string) (string, error) {
	if key == "" {
		return "", corruptf("path %q decodes to an empty key", logPath)
	}
	if strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("%w: path %q decodes to %q, which starts with '/'",
			ErrUnsupportedFeature, logPath, key)
	}
	if strings.ContainsRune(key, 0) {
		return "", fmt.Errorf("%w: path %q decodes to a key holding NUL, which no file name can hold",
			ErrUnsupportedFeature, logPath)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == ".." || seg == "." {
			return "", fmt.Errorf("%w: path %q has a %q segment; only files inside the table root can be served",
				ErrUnsupportedFeature, logPath, seg)
		}
	}
	return key, nil
}

func outsideRoot(logPath, tableRoot string) error {
	return fmt.Errorf("%w: path %q is outside the table root %s; only files inside the table root can be served",
		ErrUnsupportedFeature, logPath, tableRoot)
}
