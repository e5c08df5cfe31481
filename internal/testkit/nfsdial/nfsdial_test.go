package nfsdial

import (
	"fmt"
	"net"
	"os"
	"testing"
)

// ephemeralRange is the local port range the kernel picks from.
func ephemeralRange(t *testing.T) (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		t.Fatalf("ip_local_port_range %q: %v", b, err)
	}
	return lo, hi
}

// With the part of the client's port range that the kernel never hands
// out itself taken (61000-65535 by default: 28% of the range, so that the
// test steals no port another test is about to get), a plain dial fails
// about one time in four; Dial connects every time.
func TestDialPicksAgainWhenThePortIsTaken(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	lo, hi := ephemeralRange(t)
	for p := 49152; p < 65536; p++ {
		if p >= lo && p <= hi {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf(":%d", p)); err == nil {
			held = append(held, l)
		}
	}
	if len(held) < 2000 {
		t.Fatalf("held only %d ports outside the kernel's %d-%d", len(held), lo, hi)
	}
	for i := 0; i < 30; i++ {
		c, err := Dial(srv.Addr().String())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		c.Close()
	}
}
