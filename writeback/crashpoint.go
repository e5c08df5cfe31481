package writeback

// A test hook: crash the process at a named point of the append path, so
// that crash-safety tests (integration/crash_test.go) can SIGKILL a mount
// or `deltafs append` exactly between two steps. The hook is compiled in
// only with the build tag deltafs_crashpoints (crashpoint_on.go; `make
// test` and the tests' own builds of cmd/deltafs set it): a release build
// has no-op crash points (crashpoint_off.go) and never reads the
// environment variable.

// EnvCrashPoint names the environment variable of the crash-point test
// hook: "NAME" or "NAME@K" makes the process SIGKILL itself the K-th time
// (default 1) it reaches the point NAME of an append, one of:
//
//   - "staged": Append was called with staged files; nothing is written.
//   - "uploading": half way through storing a data file (the store has
//     read part of its bytes).
//   - "uploaded": every data file is stored; no commit is written.
//   - "committing": the commit is built and about to be put.
//   - "committed": the commit exists; the caller is not yet told.
//   - "checkpointing": the checkpoint file is stored, _last_checkpoint is
//     not yet updated.
//
// It is a test hook only: the value is read once, at start-up, and only by
// a build with the tag deltafs_crashpoints.
const EnvCrashPoint = "DELTAFS_CRASHPOINT"

// Crash point names (see EnvCrashPoint).
const (
	CrashStaged        = "staged"
	CrashUploading     = "uploading"
	CrashUploaded      = "uploaded"
	CrashCommitting    = "committing"
	CrashCommitted     = "committed"
	CrashCheckpointing = "checkpointing"
)
