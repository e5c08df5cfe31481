package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// errTimedOut is the cancellation cause of a request that hit its timeout.
var errTimedOut = errors.New("deltafs: request timeout")

// guard bounds the time a Store waits for its backend. It is armed around
// each wait (a request, a Next of a listing, a Read of a body) and disarmed
// after, so time the caller spends between reads is not counted. A guard
// with no timeout does nothing.
type guard struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	d      time.Duration
}

// newGuard returns a guard whose context ends when ctx does or when one
// armed wait lasts longer than the Store's timeout. Call done when finished.
func (s *Store) newGuard(ctx context.Context) *guard {
	if s.timeout <= 0 {
		return &guard{ctx: ctx}
	}
	gctx, cancel := context.WithCancelCause(ctx)
	g := &guard{ctx: gctx, cancel: cancel, d: s.timeout}
	g.timer = time.AfterFunc(s.timeout, func() { cancel(errTimedOut) })
	g.timer.Stop()
	return g
}

// arm starts the clock of one wait.
func (g *guard) arm() {
	if g.timer != nil {
		g.timer.Reset(g.d)
	}
}

// disarm stops the clock after a wait.
func (g *guard) disarm() {
	if g.timer != nil {
		g.timer.Stop()
	}
}

// done releases the guard's context.
func (g *guard) done() {
	if g.timer != nil {
		g.timer.Stop()
		g.cancel(context.Canceled)
	}
}

// check replaces err by one wrapping ErrTimeout when the guard fired.
func (g *guard) check(err error) error {
	if err == nil || g.timer == nil || !errors.Is(context.Cause(g.ctx), errTimedOut) {
		return err
	}
	return fmt.Errorf("%w: no answer within %v", ErrTimeout, g.d)
}

// guardedReader is the body of a ranged read: each Read is one guarded
// wait; Close releases the guard.
type guardedReader struct {
	rc   io.ReadCloser
	g    *guard
	wrap func(error) error
}

func (r *guardedReader) Read(p []byte) (int, error) {
	r.g.arm()
	n, err := r.rc.Read(p)
	r.g.disarm()
	if err != nil && err != io.EOF {
		err = r.wrap(r.g.check(err))
	}
	return n, err
}

func (r *guardedReader) Close() error {
	err := r.rc.Close()
	r.g.done()
	return err
}
