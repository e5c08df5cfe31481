package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/deltafs/deltafs/mount"
)

// openLog returns where mount messages and logs go: --log-file (appended,
// created 0640) or stderr, and how to close it.
func openLog(path string) (io.Writer, func(), error) {
	if path == "" {
		return os.Stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, nil, fmt.Errorf("--log-file: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// levelOf parses a --log-level already checked when set.
func levelOf(s string) slog.Level {
	var l slog.Level
	if l.UnmarshalText([]byte(s)) != nil {
		return slog.LevelInfo
	}
	return l
}

// indent prefixes every line of s with two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// listenMetrics listens on --metrics-addr before mounting, so that a
// taken port fails the mount at once; nil when addr is "".
func listenMetrics(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	network := "tcp"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", path
		os.Remove(path) // a socket left by a process that died
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	return l, nil
}

func closeListener(l net.Listener) {
	if l != nil {
		l.Close()
	}
}

// serveMetrics serves srv's metrics at /metrics on l (if not nil) until
// the returned function is called.
func serveMetrics(l net.Listener, srv *mount.Server, log *slog.Logger) func() {
	return serveHandler(l, srv.MetricsHandler(), log)
}

// serveHandler serves metrics (h) at /metrics on l until the returned
// stop is called; nothing when l is nil.
func serveHandler(l net.Listener, h http.Handler, log *slog.Logger) func() {
	if l == nil {
		return func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "deltafs: metrics at /metrics")
	})
	// A scraper that keeps its connection open between scrapes is dropped
	// once it has been idle for a minute: connections never pile up.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, WriteTimeout: time.Minute}
	go func() {
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("deltafs: metrics server stopped", "addr", l.Addr().String(), "err", err)
		}
	}()
	log.Info("deltafs: serving metrics", "url", "http://"+l.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	}
}
