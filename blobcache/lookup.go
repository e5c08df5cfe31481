package blobcache

import (
	"errors"
	"io/fs"
	"os"
)

// Lookup returns the derived file of key when it is on disk, without
// building it: for a file worth using only when it is already there (a
// materialized copy). It is for keys used with Derived, whose files hold
// exactly what their build wrote; a DerivedChecked key's file is not
// checked here. Lookup does not record the use in the file's mtime, so the
// file's inode, size and ctime stay as they were (a caller may check the
// bytes once and trust them while those stay the same).
//
// The caller must Close the returned file; open files are never evicted.
func (c *Cache) Lookup(key string) (*DiskFile, bool) {
	d := c.disk
	if d == nil {
		return nil, false
	}
	name := fileName(key)
	d.mu.Lock()
	e := d.entries[name]
	if e != nil {
		if e.refs++; e.elem != nil {
			d.lru.Remove(e.elem) // open: not a candidate for eviction (see diskCache.lookup)
			e.elem = nil
		}
	}
	d.mu.Unlock()
	if e == nil {
		return nil, false
	}
	f, err := d.open(e, key, false, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			d.forget(e) // deleted behind the cache's back
		}
		return nil, false
	}
	return f, true
}

// File returns the open file itself, for a caller that hands its
// descriptor on (kernel passthrough). It holds exactly Size bytes for a
// Derived file; it is valid until Close.
func (f *DiskFile) File() *os.File { return f.f }

// FileIdentity is what changes when a file on disk is replaced or edited
// (its inode, size and ctime): a caller that checked a file's bytes may
// trust them while its identity stays the same, as DerivedChecked does.
type FileIdentity struct{ id fileIdentity }

// Identity returns the identity of the file as it is on disk now; false
// when the platform gives none (the file must then be checked each time).
func (f *DiskFile) Identity() (FileIdentity, bool) {
	fi, err := f.f.Stat()
	if err != nil {
		return FileIdentity{}, false
	}
	id, ok := identityOf(fi)
	return FileIdentity{id}, ok
}
