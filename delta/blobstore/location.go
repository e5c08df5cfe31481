package blobstore

import (
	"net/url"
	"strings"
)

// location names a Store's root in messages and cache keys: a local path, or
// a URL without credentials whose query options follow every object path
// (s3://b/t/_delta_log/?endpoint=...), so that the name of an object is
// itself a usable URL.
type location struct {
	base  string // path or scheme://host/path, without a trailing '/'
	query string // encoded query options, "" for none
}

// parseWhere splits a display name (see New) into its base and query.
func parseWhere(display string) location {
	if !strings.Contains(display, "://") {
		return location{base: strings.TrimSuffix(display, "/")}
	}
	u, err := url.Parse(display)
	if err != nil {
		return location{base: display}
	}
	q := u.RawQuery
	base := u.Scheme + "://" + u.Host + strings.TrimSuffix(u.EscapedPath(), "/")
	return location{base: base, query: q}
}

// at returns the name of the object key under the root.
func (l location) at(key string) string {
	return l.withQuery(join(l.base, key))
}

// sub returns the location of the child directory dir of the root.
func (l location) sub(dir string) location {
	return location{base: join(l.base, strings.Trim(dir, "/")), query: l.query}
}

// join appends a '/'-separated name to a base path or URL.
func join(base, name string) string {
	if strings.HasSuffix(base, "/") {
		return base + name
	}
	return base + "/" + name
}

// String returns the root's name, query options included.
func (l location) String() string { return l.withQuery(l.base) }

func (l location) withQuery(s string) string {
	if l.query == "" {
		return s
	}
	return s + "?" + l.query
}
