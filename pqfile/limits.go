package pqfile

import "errors"

// ErrLimit reports a file that breaks one of the package's named limits
// (a footer, schema, page or row count larger than deltafs accepts, or a
// page that needs more memory to decode than the validation budget).
// Its message names the limit.
var ErrLimit = errors.New("pqfile: over a limit")
