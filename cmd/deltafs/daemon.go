package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// envDaemonChild is set to "1" in the background process --daemon
// starts; its file descriptor 3 is the pipe on which it reports
// readiness ("ready" or "error: ...").
const envDaemonChild = "DELTAFS_DAEMON_CHILD"

// isDaemonChild reports whether this process is a --daemon child.
func isDaemonChild() bool { return os.Getenv(envDaemonChild) == "1" }

// pidOnStdout: --daemon prints the background process's pid on stdout
// (for scripts); the fstab helper does not, as mount(8) helpers print
// nothing there.
var pidOnStdout = true

// daemonize runs `deltafs mount args...` again as a detached process
// (new session, stdin from /dev/null, output to logFile or discarded),
// waits until it reports the mount ready or failed, and prints its pid
// (pidOnStdout).
// It returns nil only once the mount is served.
func daemonize(args []string, logFile string) error {
	out, err := daemonOutput(logFile)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd, err := startBackground(context.Background(), args, os.Environ(), out)
	if err != nil {
		var early *exitedEarly
		if errors.As(err, &early) {
			where := "--log-file was not set"
			if logFile != "" {
				where = "see " + logFile
			}
			return fmt.Errorf("%w; %s", err, where)
		}
		return fmt.Errorf("--daemon: %w", err)
	}
	if pidOnStdout {
		fmt.Println(cmd.Process.Pid)
	}
	fmt.Fprintf(os.Stderr, "deltafs: mounted in the background (pid %d)\n", cmd.Process.Pid)
	return cmd.Process.Release()
}

// exitedEarly is startBackground's error for a process that exited
// without saying whether it mounted.
type exitedEarly struct{ err error }

func (e *exitedEarly) Error() string {
	return fmt.Sprintf("the background mount exited before it was ready (%v)", e.err)
}

// startBackground starts `deltafs mount args...` as a detached process
// (its own session, so that it outlives its starter and the starter's
// signals) with env and its output to out, and returns once the process
// reports the mount served (the started command) or failed (its reason,
// the process reaped). If ctx ends first, the process is killed.
func startBackground(ctx context.Context, args, env []string, out *os.File) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, append([]string{"mount"}, args...)...)
	cmd.Env = append(env, envDaemonChild+"=1")
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = out, out, []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	said := make(chan struct{})
	defer close(said)
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Kill() // its pipe closes: the read below ends
		case <-said:
		}
	}()
	msg, _ := bufio.NewReader(r).ReadString('\n')
	msg = strings.TrimSpace(msg)
	if msg == "ready" {
		return cmd, nil
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("not ready in time: %w", ctx.Err())
	}
	if after, ok := strings.CutPrefix(msg, "error: "); ok {
		return nil, errors.New(after)
	}
	return nil, &exitedEarly{werr}
}

// daemonOutput opens where the background process writes: the log file,
// or /dev/null (with a warning: its logs are lost).
func daemonOutput(logFile string) (*os.File, error) {
	if logFile == "" {
		fmt.Fprintln(os.Stderr, "deltafs: --daemon without --log-file: the mount's logs are discarded")
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	return f, nil
}

var readyOnce sync.Once

// notifyReady reports the mount's outcome once: err == nil means the
// mount is served. A --daemon child writes it to its parent's pipe;
// under systemd (Type=notify) READY=1 goes to $NOTIFY_SOCKET.
func notifyReady(err error) {
	readyOnce.Do(func() {
		if isDaemonChild() {
			msg := "ready\n"
			if err != nil {
				msg = "error: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
			}
			f := os.NewFile(3, "ready")
			io.WriteString(f, msg)
			f.Close()
		}
		if err == nil {
			sdNotify("READY=1\nSTATUS=mounted")
		}
	})
}

// notifyStopping tells systemd that the mount is being stopped.
func notifyStopping() { sdNotify("STOPPING=1") }

// sdNotify sends state to systemd's notification socket, if any.
func sdNotify(state string) {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return
	}
	if strings.HasPrefix(sock, "@") {
		sock = "\x00" + sock[1:] // abstract socket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	conn.Write([]byte(state))
}
