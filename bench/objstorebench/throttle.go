package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// throttle is a TCP proxy in front of the S3 server that makes the
// loopback behave like a remote object store: every request waits
// latency before it reaches the server (the store's time to first byte),
// and every connection's responses stream at most rate bytes per second
// (one GET stream's throughput). Several connections together get
// several times the rate, as with a real store.
type throttle struct {
	l       net.Listener
	target  string
	rate    float64 // bytes per second per connection
	latency time.Duration
	wg      sync.WaitGroup
}

// startThrottle listens on a loopback port and forwards to target.
func startThrottle(target string, rate float64, latency time.Duration) (*throttle, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &throttle{l: l, target: target, rate: rate, latency: latency}
	t.wg.Go(t.serve)
	return t, nil
}

func (t *throttle) addr() string { return t.l.Addr().String() }

// close stops accepting; connections in use end with their peers.
func (t *throttle) close() {
	t.l.Close()
	t.wg.Wait()
}

func (t *throttle) serve() {
	for {
		c, err := t.l.Accept()
		if err != nil {
			return
		}
		go t.proxy(c)
	}
}

// proxy forwards one connection: requests delayed, responses paced.
func (t *throttle) proxy(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", t.target)
	if err != nil {
		return
	}
	defer server.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.delayed(server, client)
		server.(*net.TCPConn).CloseWrite()
	}()
	t.paced(client, server)
	client.(*net.TCPConn).CloseWrite()
	<-done
}

// delayed copies src to dst as a line with the latency as propagation
// delay: each chunk goes out latency after it arrived, chunks in flight
// overlap (a request written in two pieces is not delayed twice).
func (t *throttle) delayed(dst io.Writer, src io.Reader) {
	type chunk struct {
		data []byte
		due  time.Time
	}
	line := make(chan chunk, 1024)
	go func() {
		defer close(line)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				line <- chunk{buf[:n], time.Now().Add(t.latency)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range line {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			for range line { // let the reader finish
			}
			return
		}
	}
}

// paced copies src to dst at no more than the rate: after each chunk it
// sleeps until the bytes sent since the stream went busy are due. A pause
// of the sender (between responses) does not bank credit.
func (t *throttle) paced(dst io.Writer, src io.Reader) {
	buf := make([]byte, 64<<10)
	var start time.Time
	var sent float64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			if due := start.Add(time.Duration(sent / t.rate * float64(time.Second))); start.IsZero() || now.Sub(due) > 10*time.Millisecond {
				start, sent = now, 0 // idle: restart the pacing window
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			sent += float64(n)
			if wait := time.Until(start.Add(time.Duration(sent / t.rate * float64(time.Second)))); wait > 0 {
				time.Sleep(wait)
			}
		}
		if err != nil {
			return
		}
	}
}
