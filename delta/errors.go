package delta

import (
	"errors"
	"fmt"
	"strings"

	"github.com/deltafs/deltafs/delta/action"
)

// Sentinel errors. Callers test with errors.Is; every error the engine
// returns wraps one of these (or a storage/IO error) with the table, version
// and object it concerns.
var (
	// ErrNotExist: an object (data file, commit, checkpoint) does not exist.
	ErrNotExist = errors.New("object does not exist")
	// ErrExists: a put-if-absent found the object already there.
	ErrExists = errors.New("object already exists")
	// ErrNotATable: the location holds no _delta_log.
	ErrNotATable = errors.New("not a Delta table (no _delta_log)")
	// ErrVersionNotFound: the requested version (or timestamp) is not
	// reconstructable: before the first commit, in the future, or cleaned up.
	ErrVersionNotFound = errors.New("version not found")
	// ErrCorruptLog: the log cannot be interpreted (bad JSON, a gap in the
	// commits, a checkpoint missing parts, no protocol or metadata).
	ErrCorruptLog = action.ErrCorruptLog
	// ErrUnsupportedFeature: the table needs a protocol feature or version
	// this engine does not implement.
	ErrUnsupportedFeature = errors.New("unsupported Delta protocol feature")
	// ErrCorruptDeletionVector: a deletion vector fails its checks.
	ErrCorruptDeletionVector = errors.New("corrupt deletion vector")
	// ErrInvalidSpec: a version or timestamp spec cannot be parsed.
	ErrInvalidSpec = errors.New("invalid version or timestamp")
	// ErrConflict: a commit lost the race for its version.
	ErrConflict = errors.New("commit conflict")
	// ErrUnstorableKey: the storage would keep an object under another
	// name than its key (object-store drivers escape "../", control
	// characters, ...), so a log naming the key would name nothing.
	ErrUnstorableKey = errors.New("key the storage would store under another name")
	// ErrTableChanged: the log a reader built on is gone (the table was
	// deleted or its _delta_log moved) or the location now holds another
	// table (a different metaData.id).
	ErrTableChanged = errors.New("table vanished or was replaced")
)

// UnsupportedFeatureError reports the protocol features of a table that the
// engine does not implement. It wraps ErrUnsupportedFeature.
type UnsupportedFeatureError struct {
	Table    string
	Version  int64
	Kind     string   // "reader" or "writer"
	Features []string // feature names, or "readerVersion=N"
	Detail   string   // optional explanation appended to the message
}

func (e *UnsupportedFeatureError) Error() string {
	msg := fmt.Sprintf("table %s version %d: unsupported %s feature(s): %s",
		e.Table, e.Version, e.Kind, strings.Join(e.Features, ", "))
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// Unwrap returns ErrUnsupportedFeature.
func (e *UnsupportedFeatureError) Unwrap() error { return ErrUnsupportedFeature }

// VersionNotFoundError reports a version the log cannot give: beyond the
// latest commit, or before the oldest one still reconstructable. It wraps
// ErrVersionNotFound; a LogError around it names the table only, so the
// message says the version once: "table T: version 99 not found (latest
// is 1)".
type VersionNotFoundError struct {
	Version int64
	Latest  int64  // the latest version, -1 when not known
	Reason  string // why, when not simply beyond the latest
}

func (e *VersionNotFoundError) Error() string {
	msg := fmt.Sprintf("version %d not found", e.Version)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Latest >= 0 {
		msg += fmt.Sprintf(" (latest is %d)", e.Latest)
	}
	return msg
}

// Unwrap returns ErrVersionNotFound.
func (e *VersionNotFoundError) Unwrap() error { return ErrVersionNotFound }

// LogError locates a problem in the log: the table, the version and the
// object. It wraps the cause (usually ErrCorruptLog or a storage error).
type LogError struct {
	Table   string
	Version int64 // -1 when not tied to one version
	Key     string
	Err     error
}

func (e *LogError) Error() string {
	var b strings.Builder
	b.WriteString("table ")
	b.WriteString(e.Table)
	var vnf *VersionNotFoundError
	if e.Version >= 0 && !(errors.As(e.Err, &vnf) && vnf.Version == e.Version) {
		fmt.Fprintf(&b, " version %d", e.Version)
	}
	if e.Key != "" {
		b.WriteString(" (")
		b.WriteString(e.Key)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the cause.
func (e *LogError) Unwrap() error { return e.Err }

// corruptf builds an error wrapping ErrCorruptLog.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptLog, fmt.Sprintf(format, args...))
}
