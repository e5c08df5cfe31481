//go:build linux

package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// indexServer is a read-only S3 endpoint over a directory that answers a
// LIST page the way S3 does: in time that does not grow with the
// bucket. It keeps every key of its bucket in one sorted slice (built
// once at start) and answers ListObjectsV2 with a binary search for the
// first key, so a page costs O(log n + page), where versitygw's posix
// backend reads and stats the directory for every page (about 100 ms of
// CPU per page of a 101,000-object directory here). GET and HEAD serve
// the files, ranges included. It exists to measure what deltafs itself
// costs behind the throttle; it is no test of S3 compatibility (that is
// versitygw's job in the tests).
type indexServer struct {
	root string // the bucket's directory
	keys []indexKey
}

type indexKey struct {
	key   string
	size  int64
	mtime time.Time
}

// indexServerEnv, when set, makes the benchmark binary run as an index
// server ("bucket dir") in a child process, like the throttle.
const indexServerEnv = "DELTAFS_BENCH_INDEX_SERVER_CHILD"

// runIndexServer serves dir as the benchmark's bucket on a loopback port
// and prints the address (the child side of spawnIndexServer).
func runIndexServer(dir string) error {
	s := &indexServer{root: dir}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		s.keys = append(s.keys, indexKey{key: filepath.ToSlash(rel), size: fi.Size(), mtime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(s.keys, func(i, j int) bool { return s.keys[i].key < s.keys[j].key })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().String())
	return http.Serve(l, s)
}

func (s *indexServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	b, key, _ := strings.Cut(path, "/")
	switch {
	case b == "":
		w.WriteHeader(http.StatusOK) // readiness probe
	case b != bucket:
		http.Error(w, "NoSuchBucket", http.StatusNotFound)
	case key == "" && r.Method == http.MethodGet:
		s.list(w, r.URL.Query())
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		s.object(w, r, key)
	default:
		http.Error(w, "read-only", http.StatusForbidden)
	}
}

// object serves one file, with Range support through http.ServeContent.
func (s *indexServer) object(w http.ResponseWriter, r *http.Request, key string) {
	f, err := os.Open(filepath.Join(s.root, filepath.FromSlash(key)))
	if err != nil {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Key>%s</Key></Error>`, key)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", fmt.Sprintf(`"%x-%x"`, fi.Size(), fi.ModTime().UnixNano()))
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

type listResult struct {
	XMLName               xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	MaxKeys               int            `xml:"MaxKeys"`
	KeyCount              int            `xml:"KeyCount"`
	IsTruncated           bool           `xml:"IsTruncated"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	Contents              []listObject   `xml:"Contents"`
	CommonPrefixes        []commonPrefix `xml:"CommonPrefixes"`
}

type listObject struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// list answers ListObjectsV2: keys under prefix after start-after (or the
// continuation token, which is the last key or prefix returned), grouped
// by delimiter, at most max-keys entries.
func (s *indexServer) list(w http.ResponseWriter, q url.Values) {
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	max := 1000
	if n, err := strconv.Atoi(q.Get("max-keys")); err == nil && n > 0 && n < max {
		max = n
	}
	after := q.Get("start-after")
	if tok := q.Get("continuation-token"); tok != "" {
		after = tok
	}
	res := listResult{Name: bucket, Prefix: prefix, Delimiter: delim, MaxKeys: max,
		StartAfter: q.Get("start-after"), ContinuationToken: q.Get("continuation-token")}
	from, strict := prefix, false
	if after != "" && after >= prefix {
		from, strict = after, true // keys strictly after start-after
	}
	i := sort.Search(len(s.keys), func(i int) bool {
		if strict {
			return s.keys[i].key > from
		}
		return s.keys[i].key >= from
	})
	last := ""
	for ; i < len(s.keys) && strings.HasPrefix(s.keys[i].key, prefix); i++ {
		if res.KeyCount == max {
			res.IsTruncated, res.NextContinuationToken = true, last
			break
		}
		k := s.keys[i]
		if delim != "" {
			if j := strings.Index(k.key[len(prefix):], delim); j >= 0 {
				cp := k.key[:len(prefix)+j+len(delim)]
				res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{cp})
				res.KeyCount++
				last = cp
				// Skip every key under this common prefix.
				i = sort.Search(len(s.keys), func(n int) bool { return s.keys[n].key >= cp+"\xff" }) - 1
				continue
			}
		}
		res.Contents = append(res.Contents, listObject{Key: k.key, LastModified: k.mtime.UTC().Format("2006-01-02T15:04:05.000Z"),
			ETag: fmt.Sprintf(`"%x-%x"`, k.size, k.mtime.UnixNano()), Size: k.size, StorageClass: "STANDARD"})
		res.KeyCount++
		last = k.key
	}
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, xml.Header)
	xml.NewEncoder(w).Encode(res)
}

// spawnIndexServer starts this binary as an index server of dir (the
// bucket's directory) in a child process and reads its address.
func spawnIndexServer(dir string) (*proxyProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return spawnChild(self, indexServerEnv+"="+dir)
}
