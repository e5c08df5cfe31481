// Package nfsfront serves a file system tree over NFSv3, with MOUNT on the
// same TCP port (RFC 1813; ONC RPC of RFC 5531, XDR of RFC 4506). The tree
// is the one the FUSE mount serves, taken as go-fuse's RawFileSystem
// (fs.NewNodeFS of the same root, wrapped as the mount wraps it): every
// rule of the tree (names, sizes, bytes, errors, refusals) is decided
// once, in package nodes, and this package only translates NFS's
// path-and-handle requests into the FUSE requests the kernel would have
// sent. It knows nothing of Delta.
package nfsfront

import (
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	lru "github.com/hashicorp/golang-lru/v2"
)

// tree resolves paths to the nodes of a RawFileSystem, as the kernel's
// dentry cache does: a name looked up is remembered for the entry timeout
// the file system gave, and its lookup is returned (FORGET) when the
// entry is dropped, so that the file system's inodes are bounded by
// maxEntries however many paths clients walk.
type tree struct {
	raw    fuse.RawFileSystem
	caller fuse.Caller
	cancel chan struct{} // never closed: requests are not interrupted

	mu      sync.Mutex
	entries *lru.Cache[string, *entry] // guarded by mu: path → its node
}

// entry is a looked-up path: its node, holding one lookup of it, which
// is returned once the entry has left the cache and no request uses it
// (the file system forgets a node whose lookups are all returned, and a
// request naming a forgotten node would be a FUSE protocol error).
type entry struct {
	id      uint64
	attr    fuse.Attr
	expires time.Time // the name's entry timeout
	attrEnd time.Time // the attributes' timeout
	pins    int       // guarded by tree.mu: requests using id
	gone    bool      // guarded by tree.mu: out of the cache
}

// maxEntries bounds the paths remembered, and so the nodes the tree keeps
// for this front end (each looked-up node costs the tree about 1 KiB: a
// READDIRPLUS walk of a 100,000-file snapshot took the server from 154 to
// 265-285 MiB resident with 16,384 entries, to 321-405 MiB with 131,072).
// An entry dropped is looked up again when next used: from its parent, in
// the tree's memory.
const maxEntries = 1 << 15

func newTree(raw fuse.RawFileSystem, caller fuse.Caller) *tree {
	t := &tree{raw: raw, caller: caller, cancel: make(chan struct{})}
	t.entries, _ = lru.NewWithEvict(maxEntries, func(_ string, e *entry) { t.dropLocked(e) })
	return t
}

// dropLocked takes e out of use: its lookup is returned now, or by the
// last request using it.
func (t *tree) dropLocked(e *entry) {
	e.gone = true
	if e.pins == 0 && e.id != fuse.FUSE_ROOT_ID {
		t.raw.Forget(e.id, 1)
	}
}

// release ends a request's use of e (from lookup).
func (t *tree) release(e *entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.pins--; e.pins == 0 && e.gone && e.id != fuse.FUSE_ROOT_ID {
		t.raw.Forget(e.id, 1)
	}
}

// clean returns p as the tree's key: no leading or trailing slash, "" for
// the root.
func clean(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

func (t *tree) header(id uint64) fuse.InHeader {
	return fuse.InHeader{NodeId: id, Caller: t.caller}
}

// errno turns a FUSE status into the error os.IsNotExist and friends know.
func errno(op, p string, st fuse.Status) error {
	return &os.PathError{Op: op, Path: "/" + p, Err: syscall.Errno(st)}
}

// lookup returns the node of p (clean), looking up each name the way the
// kernel would: from the nearest remembered ancestor, each name below it
// in turn. The caller must release the entry.
func (t *tree) lookup(p string) (*entry, error) {
	if p == "" {
		return t.rootEntry()
	}
	now := time.Now()
	t.mu.Lock()
	e, ok := t.entries.Get(p)
	if ok && now.Before(e.expires) {
		e.pins++
		t.mu.Unlock()
		return e, nil
	}
	t.mu.Unlock()
	dir, name := path.Split(p)
	parent, err := t.lookup(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return nil, err
	}
	defer t.release(parent)
	var out fuse.EntryOut
	h := t.header(parent.id)
	if st := t.raw.Lookup(t.cancel, &h, name, &out); st != fuse.OK {
		return nil, errno("lookup", p, st)
	}
	if out.NodeId == 0 { // a negative entry
		return nil, errno("lookup", p, fuse.ENOENT)
	}
	return t.remember(p, &out, now), nil
}

// remember keeps the looked-up node of p (holding one lookup of it) and
// returns it pinned.
func (t *tree) remember(p string, out *fuse.EntryOut, now time.Time) *entry {
	e := &entry{
		id:      out.NodeId,
		attr:    out.Attr,
		expires: now.Add(time.Duration(out.EntryValid)*time.Second + time.Duration(out.EntryValidNsec)),
		attrEnd: now.Add(time.Duration(out.AttrValid)*time.Second + time.Duration(out.AttrValidNsec)),
		pins:    1,
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries.Remove(p) // an older entry's lookup goes back through the eviction callback
	t.entries.Add(p, e)
	return e
}

// rootEntry is the root, which is never looked up nor forgotten.
func (t *tree) rootEntry() (*entry, error) {
	in := fuse.GetAttrIn{InHeader: t.header(fuse.FUSE_ROOT_ID)}
	var out fuse.AttrOut
	if st := t.raw.GetAttr(t.cancel, &in, &out); st != fuse.OK {
		return nil, errno("getattr", "", st)
	}
	return &entry{id: fuse.FUSE_ROOT_ID, attr: out.Attr, pins: 1}, nil
}

// attr returns the attributes of p, asking the file system again once
// their timeout has passed.
func (t *tree) attr(p string) (fuse.Attr, error) {
	e, err := t.lookup(p)
	if err != nil {
		return fuse.Attr{}, err
	}
	defer t.release(e)
	if p != "" && time.Now().Before(e.attrEnd) {
		return e.attr, nil
	}
	in := fuse.GetAttrIn{InHeader: t.header(e.id)}
	var out fuse.AttrOut
	if st := t.raw.GetAttr(t.cancel, &in, &out); st != fuse.OK {
		return fuse.Attr{}, errno("getattr", p, st)
	}
	return out.Attr, nil
}

// readlink returns the target of the symbolic link p.
func (t *tree) readlink(p string) (string, error) {
	e, err := t.lookup(p)
	if err != nil {
		return "", err
	}
	defer t.release(e)
	h := t.header(e.id)
	b, st := t.raw.Readlink(t.cancel, &h)
	if st != fuse.OK {
		return "", errno("readlink", p, st)
	}
	return string(b), nil
}

// forget drops p and the paths below it from the cache (a rename or a
// removal moved them): their next use looks them up again.
func (t *tree) forget(p string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range t.entries.Keys() {
		if k == p || strings.HasPrefix(k, p+"/") {
			t.entries.Remove(k)
		}
	}
}

// forgetAll returns every lookup held.
func (t *tree) forgetAll() {
	t.mu.Lock()
	t.entries.Purge()
	t.mu.Unlock()
}
