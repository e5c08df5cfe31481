// Package durable holds what makes a file system change survive a power
// loss, shared by every package that writes files deltafs relies on (the
// local store's commits, the inbox's uploads, the disk cache).
package durable

import "os"

// SyncDir fsyncs the directory dir, so that a create, rename or link in
// it survives a power loss (fsync of a file does not cover its name).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
