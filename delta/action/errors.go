package action

import (
	"errors"
	"fmt"
)

// ErrCorruptLog is wrapped by every error about a log that breaks the
// protocol: a line that is not an action, an action missing a field the
// protocol requires, a schema that does not parse. The delta package
// reports it as delta.ErrCorruptLog.
var ErrCorruptLog = errors.New("corrupt Delta log")

// MaxLineBytes bounds one action line of a JSON log file: 64 MiB (an add
// with statistics is a few kilobytes).
var MaxLineBytes = 64 << 20

// corruptf builds an error wrapping ErrCorruptLog.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptLog, fmt.Sprintf(format, args...))
}
