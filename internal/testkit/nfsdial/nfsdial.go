// Package nfsdial connects the NFS test client (go-nfs-client) to a server.
//
// The client binds its connection to a local port it picks at random from
// 49152-65535, and retries another port only for privileged ports; an
// unprivileged pick that lands on a port in use (another connection's, or
// one in TIME_WAIT; the kernel's ephemeral range overlaps it) fails the
// dial with EADDRINUSE: rare, and it failed a CI run once. Dial picks
// again, as the client does for privileged ports.
package nfsdial

import (
	"errors"
	"syscall"
	"time"

	"github.com/willscott/go-nfs-client/nfs/rpc"
)

// attempts bounds the retries: 20 random picks all landing on ports in use
// means most of the range is taken, an error worth seeing.
const attempts = 20

// Dial connects an unprivileged RPC client to the server at addr.
func Dial(addr string) (*rpc.Client, error) {
	var err error
	for i := 0; i < attempts; i++ {
		var c *rpc.Client
		if c, err = rpc.DialTCP("tcp", addr, false); err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
		// The client seeds its pick with the time in nanoseconds: let
		// it move on.
		time.Sleep(time.Millisecond)
	}
	return nil, err
}
