package nodes

import (
	"context"
	"encoding/json"
	"strconv"
	"syscall"
)

// Extended attributes of data files (served only with Options.XAttrs; the
// mount disables xattrs in the kernel otherwise, so that `ls -l` does not
// pay two uncached round trips per file).
const (
	xattrNumRecords      = "user.delta.numRecords"
	xattrDeletedRows     = "user.delta.deletedRows"
	xattrPartitionValues = "user.delta.partitionValues"
	xattrStats           = "user.delta.stats"
)

var xattrNames = []string{xattrNumRecords, xattrDeletedRows, xattrPartitionValues, xattrStats}

// Getxattr serves the user.delta.* attributes. numRecords is the physical
// row count (before deletion vectors), deletedRows the deletion vector's
// cardinality, partitionValues a JSON object under logical names (null
// for a null value), stats the add action's JSON statistics.
func (d *DataFile) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if !d.env().Opts.XAttrs {
		return 0, syscall.ENODATA
	}
	val, errno := d.xattr(ctx, attr)
	if errno != 0 {
		return 0, errno
	}
	if len(dest) < len(val) {
		return uint32(len(val)), syscall.ERANGE
	}
	return uint32(copy(dest, val)), 0
}

func (d *DataFile) xattr(ctx context.Context, attr string) ([]byte, syscall.Errno) {
	add := d.add
	switch attr {
	case xattrNumRecords:
		snap, err := d.ref.snapshot(ctx)
		var n int64
		if err == nil {
			n, err = snap.NumRecords(ctx, add)
		}
		if err != nil {
			return nil, d.env().DataErrno("numRecords", err, d.logAttrs()...)
		}
		return []byte(strconv.FormatInt(n, 10)), 0
	case xattrDeletedRows:
		var n int64
		if add.DeletionVector != nil {
			n = add.DeletionVector.Cardinality
		}
		return []byte(strconv.FormatInt(n, 10)), 0
	case xattrPartitionValues:
		_, f, err := d.live(ctx)
		var b []byte
		if err == nil {
			b, err = json.Marshal(f.PartitionValues)
		}
		if err != nil {
			return nil, d.env().DataErrno("partitionValues", err, d.logAttrs()...)
		}
		return b, 0
	case xattrStats:
		if add.Stats == "" {
			return nil, syscall.ENODATA
		}
		return []byte(add.Stats), 0
	}
	return nil, syscall.ENODATA
}

// Listxattr lists the user.delta.* attributes.
func (d *DataFile) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	if !d.env().Opts.XAttrs {
		return 0, 0
	}
	var list []byte
	for _, n := range xattrNames {
		if n == xattrStats && d.add.Stats == "" {
			continue
		}
		list = append(append(list, n...), 0)
	}
	if len(dest) < len(list) {
		return uint32(len(list)), syscall.ERANGE
	}
	return uint32(copy(dest, list)), 0
}
