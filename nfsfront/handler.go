package nfsfront

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io/fs"
	"net"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
	lru "github.com/hashicorp/golang-lru/v2"
	nfs "github.com/willscott/go-nfs"
)

// handler is go-nfs's Handler for one tree: one export ("/"), no
// authentication beyond what the client says (AUTH_SYS is its word), file
// handles derived from paths.
//
// A handle is a hash of the path (handleSize bytes): the same path has the
// same handle in every run of the server, which a client holding handles
// across a restart needs. Going back from a handle to its path needs the
// path to have been given out before, in this run or one whose journal
// this run read (handles.go); an unknown handle is NFS3ERR_STALE, and the
// client looks the path up again from the export's root.
type handler struct {
	fs      *FS
	handles *handles

	mu       sync.Mutex
	listings *lru.Cache[listingKey, []fs.FileInfo] // guarded by mu: READDIR pages' listings
	listed   int                                   // guarded by mu: entries in listings
}

// handleSize is the length of a file handle (NFSv3 allows up to 64).
const handleSize = 16

// maxHandles bounds the handles remembered (about 150 bytes each, in
// memory and in the journal).
const maxHandles = 1 << 18

// maxListings and maxListed bound the directory listings kept for
// READDIR(PLUS) continuations (go-nfs pages a listing by its index): in
// number, and in entries (about 150 bytes each); the newest listing is
// kept whatever its size, for its own pages.
const (
	maxListings = 64
	maxListed   = 1 << 18
)

type listingKey struct {
	path     string
	verifier uint64
}

var (
	_ nfs.Handler        = (*handler)(nil)
	_ nfs.CachingHandler = (*handler)(nil)
)

func newHandler(f *FS, hs *handles) *handler {
	h := &handler{fs: f, handles: hs}
	h.listings, _ = lru.NewWithEvict(maxListings, func(_ listingKey, v []fs.FileInfo) { h.listed -= len(v) })
	return h
}

// Mount accepts the export "/" only.
func (h *handler) Mount(_ context.Context, _ net.Conn, req nfs.MountRequest) (nfs.MountStatus, billy.Filesystem, []nfs.AuthFlavor) {
	if clean(string(req.Dirpath)) != "" {
		return nfs.MountStatusErrNoEnt, nil, nil
	}
	return nfs.MountStatusOk, h.fs, []nfs.AuthFlavor{nfs.AuthFlavorNull, nfs.AuthFlavorUnix}
}

// Change sends attribute changes to the tree (nil when read-only).
func (h *handler) Change(billy.Filesystem) billy.Change {
	if h.fs.writes == nil {
		return nil
	}
	return changer{h.fs}
}

// FSStat reports no sizes: the tree's space is its stores'.
func (h *handler) FSStat(context.Context, billy.Filesystem, *nfs.FSStat) error { return nil }

// ToHandle returns the handle of path.
func (h *handler) ToHandle(_ billy.Filesystem, p []string) []byte {
	key := handleOf(strings.Join(p, "/"))
	h.handles.add(key, clean(strings.Join(p, "/")))
	return key[:]
}

func handleOf(p string) [handleSize]byte {
	sum := sha256.Sum256([]byte("deltafs-nfs/v1\x00" + clean(p)))
	var key [handleSize]byte
	copy(key[:], sum[:])
	return key
}

var errStale = errors.New("unknown file handle")

// FromHandle returns the path of a handle this server gave.
func (h *handler) FromHandle(fh []byte) (billy.Filesystem, []string, error) {
	if len(fh) != handleSize {
		return nil, nil, errStale
	}
	key := [handleSize]byte(fh)
	if key == handleOf("") {
		return h.fs, []string{}, nil
	}
	p, ok := h.handles.get(key)
	if !ok {
		return nil, nil, errStale
	}
	return h.fs, strings.Split(p, "/"), nil
}

// InvalidateHandle forgets a handle (go-nfs calls it for removed files).
func (h *handler) InvalidateHandle(_ billy.Filesystem, fh []byte) error {
	if len(fh) == handleSize {
		h.handles.remove([handleSize]byte(fh))
	}
	return nil
}

// HandleLimit is how many handles are remembered; go-nfs also caps a
// READDIRPLUS reply at half of it.
func (h *handler) HandleLimit() int { return maxHandles }

// VerifierFor returns the cookie verifier of a listing: a hash of its
// names and inode numbers, so that a directory that changed between two
// READDIR pages is noticed (NFS3ERR_BAD_COOKIE) instead of read torn.
func (h *handler) VerifierFor(p string, contents []fs.FileInfo) uint64 {
	sum := fnv.New64a()
	for _, fi := range contents {
		sum.Write([]byte(fi.Name()))
		sum.Write([]byte{0})
		if info, ok := fi.(*fileInfo); ok {
			sum.Write(binary.LittleEndian.AppendUint64(nil, info.attr.Ino))
		}
	}
	v := sum.Sum64() | 1 // 0 means "no verifier"
	key := listingKey{clean(p), v}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listings.Remove(key)
	h.listings.Add(key, contents)
	h.listed += len(contents)
	for h.listed > maxListed && h.listings.Len() > 1 {
		h.listings.RemoveOldest()
	}
	return v
}

// DataForVerifier returns the listing a verifier was given for.
func (h *handler) DataForVerifier(p string, v uint64) []fs.FileInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	contents, _ := h.listings.Get(listingKey{clean(p), v})
	return contents
}
