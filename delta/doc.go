// Package delta reads (and appends to) Delta Lake tables.
//
// It reconstructs, for any version of a table, exactly which data files are
// live and which of their rows are deleted, following the Delta transaction
// log protocol: commits, classic, multi-part and V2 checkpoints, sidecars,
// deletion vectors, column mapping and protocol feature gating.
//
// The package knows nothing of FUSE, caches of data files or staging: it reads
// and writes objects only through the Storage interface it declares, so it can
// be used on its own. The read path is a chain of small concepts, one file
// each: log file names (logname.go), the listing (listing.go), the segment
// planner (planner.go), the state cache (statecache.go), the one build of a
// snapshot (build.go, which reads top to bottom), replay (replay.go), the
// immutable Snapshot (snapshot.go), the newest version (latest.go),
// deletion vectors (dv.go), time travel (timetravel.go), history
// (history.go) and the change feed (changes.go). The actions and schema
// are package delta/action; the checkpoint codec is package
// delta/checkpoint.
package delta
