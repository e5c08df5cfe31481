package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is an object-store test server running as a child process on a
// loopback port, with its data under a test temp dir. It is stopped by the
// test's cleanup; Stop and Start stop and restart it (same port, same data)
// to test faults. Its methods are for the test goroutine only.
type Server struct {
	// Kind is "s3", "gcs" or "azure".
	Kind string
	// URL is the bucket URL for blobstore.Open / gocloud, with the query
	// options the server needs (append a path for a prefix inside the bucket:
	// insert it before '?', see BucketURL).
	URL string
	// Bucket is the bucket (container) name.
	Bucket string
	// BucketDir is the directory holding the bucket's objects as files
	// (versitygw's posix backend), or "" when the server stores them some
	// other way (fake-gcs-server, Azurite).
	BucketDir string
	// Env holds the environment variables the gocloud openers need for
	// URL; they are also set in the test's environment (t.Setenv).
	Env map[string]string
	// Addr is the server's host:port.
	Addr string

	t       testing.TB
	argv    []string
	procEnv []string
	logPath string
	ready   func(ctx context.Context) error
	cmd     *exec.Cmd
	exited  chan struct{}
}

// BucketURL returns s.URL with path (a prefix inside the bucket, such as
// "tables/orders") inserted before the query.
func (s *Server) BucketURL(path string) string {
	base, query, _ := strings.Cut(s.URL, "?")
	u := strings.TrimSuffix(base, "/") + "/" + strings.Trim(path, "/")
	if query != "" {
		u += "?" + query
	}
	return u
}

// Start starts (or restarts) the server process and waits until it answers
// HTTP, failing the test after 30 s.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatalf("testenv: %s server already running", s.Kind)
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatalf("testenv: %v", err)
	}
	defer logf.Close()
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = append(os.Environ(), s.procEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("testenv: start %s: %v", s.argv[0], err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(cmd, s.exited)
	if err := s.waitReady(30 * time.Second); err != nil {
		s.Stop()
		s.t.Fatalf("testenv: %s server %s not ready: %v\n%s", s.Kind, s.Addr, err, tail(s.logPath))
	}
}

// waitReady polls the server's readiness check until it passes, the
// process exits or d passes.
func (s *Server) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.ready(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("process exited (%v)", s.cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// Stop stops the server process (SIGTERM, then SIGKILL after 5 s) and
// waits for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-s.exited
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL) // children left behind, if any
	s.cmd = nil
}

// Kill kills the server process with SIGKILL, as a crash would: open
// connections break mid-response. Start restarts it.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// newServer prepares a Server on a free loopback port with a data dir,
// sets env in the test's environment and registers its Stop as cleanup.
func newServer(t testing.TB, kind string) (*Server, string) {
	t.Helper()
	data := filepath.Join(t.TempDir(), kind)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	s := &Server{Kind: kind, Addr: freeAddr(t), Env: map[string]string{}, t: t,
		logPath: filepath.Join(filepath.Dir(data), kind+".log")}
	t.Cleanup(s.Stop)
	return s, data
}

// setEnv records and sets the environment variables of s.
func (s *Server) setEnv(kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		s.Env[kv[i]] = kv[i+1]
		s.t.Setenv(kv[i], kv[i+1])
	}
}

// freeAddr returns a loopback host:port nobody listens on now.
func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// httpAnswers is a readiness check: any HTTP response from url will do.
func httpAnswers(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
}

// tail returns the last lines of a server log, for failure messages.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return "server log " + path + ":\n" + string(bytes.TrimSpace(data))
}

// errStatus reports an unexpected HTTP status with the response body.
func errStatus(op string, resp *http.Response) error {
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return errors.New(op + ": " + resp.Status + ": " + strings.TrimSpace(b.String()))
}

// Credentials of the test servers: fixed, local, not secrets.
const (
	s3AccessKey = "deltafs-test-key"
	s3SecretKey = "deltafs-test-secret"
	// AzuriteAccount and AzuriteKey are Azurite's well-known dev account.
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	testBucket     = "deltafs-test"
)

// S3 starts versitygw (posix backend) with one empty bucket and returns
// the bucket URL, the bucket's directory on disk and the environment set
// for the AWS SDK. See StartS3.
func S3(t testing.TB) (url, bucketDir string, env map[string]string) {
	t.Helper()
	s := StartS3(t)
	if s == nil {
		return "", "", nil
	}
	return s.URL, s.BucketDir, s.Env
}

// StartS3 starts versitygw (.tools/bin or PATH; skips the test when
// missing, see Skip) on a free loopback port with a bucket "deltafs-test"
// in a temp dir, sets AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (and keeps
// the SDK away from ~/.aws and instance metadata), and returns it running.
func StartS3(t testing.TB) *Server {
	t.Helper()
	bin := Tool(t, "versitygw")
	if bin == "" {
		return nil
	}
	s, data := newServer(t, "s3")
	s.Bucket, s.BucketDir = testBucket, filepath.Join(data, testBucket)
	if err := os.MkdirAll(s.BucketDir, 0o755); err != nil { // posix: a bucket is a directory
		t.Fatalf("testenv: %v", err)
	}
	s.argv = []string{bin, "--port", s.Addr, "--quiet", "posix", data}
	s.procEnv = []string{"ROOT_ACCESS_KEY_ID=" + s3AccessKey, "ROOT_SECRET_ACCESS_KEY=" + s3SecretKey}
	s.ready = httpAnswers("http://" + s.Addr + "/")
	noFile := filepath.Join(data, "no-such-aws-config")
	s.setEnv("AWS_ACCESS_KEY_ID", s3AccessKey, "AWS_SECRET_ACCESS_KEY", s3SecretKey,
		"AWS_SESSION_TOKEN", "", "AWS_PROFILE", "", "AWS_REGION", "us-east-1",
		"AWS_CONFIG_FILE", noFile, "AWS_SHARED_CREDENTIALS_FILE", noFile, "AWS_EC2_METADATA_DISABLED", "true")
	s.URL = fmt.Sprintf("s3://%s?endpoint=http://%s&use_path_style=true&disable_https=true&region=us-east-1", s.Bucket, s.Addr)
	s.Start()
	return s
}

// GCS starts fake-gcs-server with one empty bucket and returns the bucket
// URL, "" (objects are not plain files) and the environment set
// (STORAGE_EMULATOR_HOST). See StartGCS.
func GCS(t testing.TB) (url, bucketDir string, env map[string]string) {
	t.Helper()
	s := StartGCS(t)
	if s == nil {
		return "", "", nil
	}
	return s.URL, s.BucketDir, s.Env
}

// StartGCS starts fake-gcs-server (.tools/bin or PATH; skips when
// missing) over HTTP on a free loopback port with its filesystem backend in
// a temp dir, creates the bucket "deltafs-test" and sets
// STORAGE_EMULATOR_HOST, which gocloud's gcsblob then uses without
// credentials.
func StartGCS(t testing.TB) *Server {
	t.Helper()
	bin := Tool(t, "fake-gcs-server")
	if bin == "" {
		return nil
	}
	s, data := newServer(t, "gcs")
	host, port, _ := net.SplitHostPort(s.Addr)
	s.Bucket = testBucket
	s.argv = []string{bin, "-scheme", "http", "-host", host, "-port", port, "-backend", "filesystem",
		"-filesystem-root", data, "-public-host", s.Addr, "-external-url", "http://" + s.Addr, "-log-level", "warn"}
	s.ready = httpAnswers("http://" + s.Addr + "/storage/v1/b")
	s.setEnv("STORAGE_EMULATOR_HOST", s.Addr, "STORAGE_EMULATOR_HOST_GRPC", "")
	s.URL = "gs://" + s.Bucket
	s.Start()
	body := strings.NewReader(`{"name":"` + s.Bucket + `"}`)
	resp, err := http.Post("http://"+s.Addr+"/storage/v1/b?project=test", "application/json", body)
	if err == nil {
		err = errStatus("create bucket", resp)
		resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("testenv: fake-gcs-server: %v", err)
	}
	return s
}

// Azure starts Azurite with one empty container and returns the container
// URL, "" and the environment set (AZURE_STORAGE_CONNECTION_STRING). See
// StartAzure.
func Azure(t testing.TB) (url, bucketDir string, env map[string]string) {
	t.Helper()
	s := StartAzure(t)
	if s == nil {
		return "", "", nil
	}
	return s.URL, s.BucketDir, s.Env
}

// StartAzure starts Azurite's blob service (npm package azurite in
// .tools/node; skips when it or node is missing) on a free loopback port
// with its data in a temp dir and telemetry off, creates the container
// "deltafs-test" and sets AZURE_STORAGE_CONNECTION_STRING for the dev
// account (clearing the other AZURE_STORAGE_* variables that would take
// precedence).
func StartAzure(t testing.TB) *Server {
	t.Helper()
	dir := NodeDir(t, "azurite")
	if dir == "" {
		return nil
	}
	s, data := newServer(t, "azure")
	host, port, _ := net.SplitHostPort(s.Addr)
	s.Bucket = testBucket
	s.argv = []string{"node", filepath.Join(dir, "node_modules", "azurite", "dist", "src", "blob", "main.js"),
		"--blobHost", host, "--blobPort", port, "--location", data,
		"--skipApiVersionCheck", "--disableTelemetry", "--silent"}
	s.ready = httpAnswers("http://" + s.Addr + "/" + AzuriteAccount + "?comp=list")
	conn := fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=http://%s/%s;",
		AzuriteAccount, AzuriteKey, s.Addr, AzuriteAccount)
	s.setEnv("AZURE_STORAGE_CONNECTION_STRING", conn, "AZURE_STORAGE_ACCOUNT", "", "AZURE_STORAGE_KEY", "",
		"AZURE_STORAGE_SAS_TOKEN", "", "AZURE_STORAGEBLOB_CONNECTIONSTRING", "")
	s.URL = "azblob://" + s.Bucket
	s.Start()
	if err := createContainer(conn, s.Bucket); err != nil {
		t.Fatalf("testenv: azurite: create container: %v", err)
	}
	return s
}
