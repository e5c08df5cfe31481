//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/delta/blobstore"
)

// Fixed local credentials of the benchmark's server: not secrets.
const (
	accessKey = "deltafs-bench-key"
	secretKey = "deltafs-bench-secret"
	bucket    = "bench"
)

// s3Server is a versitygw child process (posix backend) serving one
// bucket from a temp dir on a loopback port.
type s3Server struct {
	addr string
	cmd  *exec.Cmd
}

// findVersitygw returns the versitygw of the repo's .tools/bin (found from
// the working directory up), else of PATH, else "".
func findVersitygw() string {
	dir, err := os.Getwd()
	for err == nil {
		p := filepath.Join(dir, ".tools", "bin", "versitygw")
		if _, serr := os.Stat(p); serr == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	p, _ := exec.LookPath("versitygw")
	return p
}

// startS3 starts versitygw with its data under dir, sets the AWS
// environment this process's S3 clients need and waits until it answers.
func startS3(bin, dir string) (*s3Server, error) {
	data := filepath.Join(dir, "s3")
	if err := os.MkdirAll(filepath.Join(data, bucket), 0o755); err != nil { // posix: a bucket is a directory
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+accessKey, "ROOT_SECRET_ACCESS_KEY="+secretKey)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &s3Server{addr: addr, cmd: cmd}
	noFile := filepath.Join(dir, "no-such-aws-config")
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey,
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": noFile,
		"AWS_SHARED_CREDENTIALS_FILE": noFile, "AWS_EC2_METADATA_DISABLED": "true"} {
		os.Setenv(k, v)
	}
	if err := s.waitReady(30 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls the server until it answers HTTP or d passes.
func (s *s3Server) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw at %s not ready: %w", s.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the server's process group and waits for it.
func (s *s3Server) stop() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd.Wait()
}

// url returns the s3:// URL of path in the bucket.
func (s *s3Server) url(path string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=http://%s&use_path_style=true&disable_https=true&region=us-east-1",
		bucket, strings.Trim(path, "/"), s.addr)
}

// open opens path in the bucket as a blobstore.Store.
func (s *s3Server) open(path string) (*blobstore.Store, error) {
	return blobstore.Open(context.Background(), s.url(path))
}
