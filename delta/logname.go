package delta

import (
	"fmt"
	"regexp"
	"strconv"
)

// LogFileKind says what a file of _delta_log is.
type LogFileKind int

// The kinds of log files. Anything else in _delta_log is junk and skipped.
const (
	KindCommit           LogFileKind = iota // V.json
	KindCheckpoint                          // V.checkpoint.parquet (classic; V1 or V2 content)
	KindMultiPartCheckpt                    // V.checkpoint.O.P.parquet
	KindUUIDCheckpoint                      // V.checkpoint.<uuid>.json|parquet (V2)
	KindCompaction                          // X.Y.compacted.json
	KindChecksum                            // V.crc
)

// LogFile is a parsed _delta_log entry. Invariant: Version >= 0; for
// multi-part checkpoints 1 <= Part <= Parts; for compactions EndVersion >
// Version.
type LogFile struct {
	ObjectInfo
	Kind       LogFileKind
	Version    int64
	Part       int
	Parts      int
	EndVersion int64
	JSON       bool // UUID checkpoint in JSON form
}

// The anchored patterns Delta kernels use for log file names.
var (
	commitRe     = regexp.MustCompile(`^(\d+)\.json$`)
	compactionRe = regexp.MustCompile(`^(\d+)\.(\d+)\.compacted\.json$`)
	checkpointRe = regexp.MustCompile(`^(\d+)\.checkpoint((\.(\d+)\.(\d+))?\.parquet|\.([^.]+)\.(json|parquet))$`)
	crcRe        = regexp.MustCompile(`^(\d+)\.crc$`)
)

// ParseLogName classifies a file name of _delta_log (the base name, without
// directory). ok is false for junk: temp files, Hadoop .crc sidecars,
// .DS_Store, gocloud .attrs files and everything else.
func ParseLogName(name string) (f LogFile, ok bool) {
	if m := commitRe.FindStringSubmatch(name); m != nil {
		v, err := parseVersion(m[1])
		return LogFile{Kind: KindCommit, Version: v}, err == nil
	}
	if m := checkpointRe.FindStringSubmatch(name); m != nil {
		v, err := parseVersion(m[1])
		if err != nil {
			return f, false
		}
		f = LogFile{Kind: KindCheckpoint, Version: v}
		switch {
		case m[3] != "":
			part, err1 := strconv.Atoi(m[4])
			parts, err2 := strconv.Atoi(m[5])
			if err1 != nil || err2 != nil || part < 1 || part > parts {
				return f, false
			}
			f.Kind, f.Part, f.Parts = KindMultiPartCheckpt, part, parts
		case m[6] != "":
			f.Kind, f.JSON = KindUUIDCheckpoint, m[7] == "json"
		}
		return f, true
	}
	if m := compactionRe.FindStringSubmatch(name); m != nil {
		v, err1 := parseVersion(m[1])
		e, err2 := parseVersion(m[2])
		return LogFile{Kind: KindCompaction, Version: v, EndVersion: e}, err1 == nil && err2 == nil && e > v
	}
	if m := crcRe.FindStringSubmatch(name); m != nil {
		v, err := parseVersion(m[1])
		return LogFile{Kind: KindChecksum, Version: v}, err == nil
	}
	return f, false
}

func parseVersion(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad version %q", s)
	}
	return v, nil
}

// LogDir is the key prefix of the log.
const LogDir = "_delta_log/"

// CommitKey returns the key of the commit file of version v.
func CommitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

// CheckpointKey returns the key of the classic checkpoint of version v.
func CheckpointKey(v int64) string { return fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, v) }

// versionPrefix is the 20-digit name prefix that lists from version v.
func versionPrefix(v int64) string { return fmt.Sprintf("%020d", v) }
