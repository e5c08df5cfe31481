package nfsfront

// ONC RPC (RFC 5531) over TCP: record marking, call headers, AUTH_SYS, and
// one connection's loop of calls and replies.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"
)

// ONC RPC over TCP (RFC 5531): records made of fragments, each with a
// 4-byte header (the last fragment's high bit set, the length in the low
// 31 bits). A record larger than maxRecord closes the connection: no
// request of ours needs more than a WRITE of wtmax bytes.

const (
	maxRecord = wtmax + 64<<10
	// maxInFlight bounds the requests of one connection being answered at
	// once (clients pipeline READs and WRITEs).
	maxInFlight = 16
)

// The RPC constants used here.
const (
	msgCall       = 0
	rpcReply      = 1
	msgAccepted   = 0
	msgDenied     = 1
	acceptSuccess = 0
	progUnavail   = 1
	progMismatch  = 2
	procUnavail   = 3
	garbageArgs   = 4
	systemErr     = 5
	rpcMismatch   = 0
	authError     = 1
	authTooWeak   = 5
	authNone      = 0
	authSys       = 1
)

// call is one decoded RPC call: its header, the caller's AUTH_SYS
// credentials when given, and its arguments.
type call struct {
	xid, prog, vers, proc uint32
	uid, gid              uint32
	args                  decoder
	badVersion            bool // not RPC version 2: answered RPC_MISMATCH
}

var errRecordTooLarge = errors.New("RPC record too large")

// readRecord reads one whole record (its fragments joined).
func readRecord(r *bufio.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		h := binary.BigEndian.Uint32(hdr[:])
		n := int(h &^ (1 << 31))
		if len(buf)+n > maxRecord {
			return nil, errRecordTooLarge
		}
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, err
		}
		if h&(1<<31) != 0 {
			return buf, nil
		}
	}
}

// parseCall decodes a call's header; ok is false for a record that is
// not an RPC call (the connection is closed).
func parseCall(rec []byte) (c call, ok bool) {
	d := decoder{b: rec}
	c.xid = d.uint32()
	if d.uint32() != msgCall {
		return c, false
	}
	rpcvers := d.uint32()
	c.prog, c.vers, c.proc = d.uint32(), d.uint32(), d.uint32()
	flavor := d.uint32()
	body := d.opaque(400)
	d.uint32()    // verifier flavor
	d.opaque(400) // verifier body
	if d.err != nil {
		return c, false
	}
	if rpcvers != 2 {
		c.badVersion = true
		return c, true
	}
	if flavor == authSys {
		a := decoder{b: body}
		a.uint32()    // stamp
		a.opaque(255) // machine name
		c.uid, c.gid = a.uint32(), a.uint32()
	}
	c.args = d
	return c, true
}

// replyHeader starts an accepted reply to xid with status stat.
func replyHeader(xid, stat uint32) *encoder {
	e := &encoder{b: make([]byte, 4, 256)} // room for the record mark
	e.uint32(xid)
	e.uint32(rpcReply)
	e.uint32(msgAccepted)
	e.uint32(authNone) // verifier
	e.uint32(0)
	e.uint32(stat)
	return e
}

// conn serves one client connection: records are read in turn, each call
// answered by its own goroutine (at most maxInFlight at once), replies
// written whole under a lock.
type conn struct {
	s   *Server
	c   net.Conn
	wmu sync.Mutex
	log *slog.Logger
}

func (c *conn) serve() {
	defer c.c.Close()
	r := bufio.NewReaderSize(c.c, 64<<10)
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		rec, err := readRecord(r, nil)
		if err != nil {
			if errors.Is(err, errRecordTooLarge) {
				c.log.Debug("deltafs: nfs: record too large; connection closed", "client", c.c.RemoteAddr().String())
			}
			return
		}
		cl, ok := parseCall(rec)
		if !ok {
			return
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			out := c.handle(cl)
			obs := c.s.obs
			status := ""
			if obs != nil {
				status = replyStatus(cl, out.b) // before reply, which may recycle out's buffer
			}
			c.reply(out)
			if obs != nil {
				obs.Request(procName(cl), status, time.Since(start))
			}
		}()
	}
}

// handle answers one call; a panic becomes SYSTEM_ERR, logged.
func (c *conn) handle(cl call) (out *encoder) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("deltafs: nfs: request failed", "prog", cl.prog, "proc", cl.proc, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			out = replyHeader(cl.xid, systemErr)
		}
	}()
	if cl.badVersion {
		return c.denied(cl.xid)
	}
	switch cl.prog {
	case nfsProgram:
		if cl.vers != 3 {
			return mismatch(cl.xid, 3)
		}
		return c.s.nfs3(cl)
	case mountProgram:
		if cl.vers != 3 {
			return mismatch(cl.xid, 3)
		}
		return c.s.mount3(cl)
	}
	return replyHeader(cl.xid, progUnavail)
}

// denied answers a call of another RPC version.
func (c *conn) denied(xid uint32) *encoder {
	e := &encoder{b: make([]byte, 4, 64)}
	e.uint32(xid)
	e.uint32(rpcReply)
	e.uint32(msgDenied)
	e.uint32(rpcMismatch)
	e.uint32(2)
	e.uint32(2)
	return e
}

func mismatch(xid, vers uint32) *encoder {
	e := replyHeader(xid, progMismatch)
	e.uint32(vers)
	e.uint32(vers)
	return e
}

// reply writes a reply as one record.
func (c *conn) reply(e *encoder) {
	binary.BigEndian.PutUint32(e.b, 1<<31|uint32(len(e.b)-4))
	c.wmu.Lock()
	_, err := c.c.Write(e.b)
	c.wmu.Unlock()
	if err != nil {
		c.c.Close()
	}
	if e.pooled {
		putBuf(e.b)
	}
}
