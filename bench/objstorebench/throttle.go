//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// throttleEnv, when set in the environment, makes the benchmark binary run
// as a throttle ("target,bytes per second,latency") instead: the proxy's
// CPU then is not the mount's, as with a real remote store.
const throttleEnv = "DELTAFS_BENCH_THROTTLE_CHILD"

// proxyProcess is a throttle running in a child process.
type proxyProcess struct {
	cmd  *exec.Cmd
	addr string
}

// spawnThrottle starts this binary as a throttle child and reads the
// address it listens on.
func spawnThrottle(target string, rate float64, latency time.Duration) (*proxyProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return spawnChild(self, fmt.Sprintf("%s=%s,%d,%s", throttleEnv, target, int64(rate), latency))
}

// spawnChild runs bin with env added (which makes it a throttle or an
// index server), dying with this process, and reads the address it
// prints first.
func spawnChild(bin, env string) (*proxyProcess, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("benchmark child (%s): %w", env, err)
	}
	return &proxyProcess{cmd: cmd, addr: strings.TrimSpace(line)}, nil
}

func (p *proxyProcess) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// runThrottleChild serves as the throttle described by spec until killed.
func runThrottleChild(spec string) error {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return fmt.Errorf("%s=%q: want target,rate,latency", throttleEnv, spec)
	}
	rate, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return err
	}
	latency, err := time.ParseDuration(parts[2])
	if err != nil {
		return err
	}
	t, err := startThrottle(parts[0], float64(rate), latency)
	if err != nil {
		return err
	}
	fmt.Println(t.addr())
	t.wg.Wait()
	return nil
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
