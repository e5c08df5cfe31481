//go:build !linux

package mount

// raiseReadAhead does nothing here: the read-ahead knob is Linux's
// /sys/class/bdi.
func (s *Server) raiseReadAhead() {}
