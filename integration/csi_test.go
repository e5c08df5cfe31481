package integration

// The CSI node plugin played as the kubelet plays it: `deltafs csi`
// started as a process, NodePublishVolume and NodeUnpublishVolume over
// its Unix socket, real FUSE mounts at the targets, reads and inbox
// appends through them, a plugin killed and restarted between the two.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// csiPlugin is a running `deltafs csi`.
type csiPlugin struct {
	cmd      *exec.Cmd
	sock     string
	stateDir string
	logPath  string
	node     csipb.NodeClient
	conn     *grpc.ClientConn
}

// startCSI starts `deltafs csi` on stateDir with env (nil: the test's)
// and connects to it. It is killed when the test ends; the volumes it
// published are unmounted and their processes ended by csiCleanup.
func startCSI(t *testing.T, stateDir string, env []string, args ...string) *csiPlugin {
	t.Helper()
	testenv.RequireFUSE(t)
	p := &csiPlugin{stateDir: stateDir, sock: filepath.Join(stateDir, "csi.sock"), logPath: filepath.Join(stateDir, "plugin.log")}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(deltafsBin(t), "csi", "--endpoint", "unix://"+p.sock, "--node-id", "test-node",
		"--state-dir", stateDir, "--log-level", "debug", "--pods-dir", os.TempDir())
	p.cmd.Args = append(p.cmd.Args, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if env != nil {
		p.cmd.Env = env
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	if !eventually(30*time.Second, func() bool { _, err := os.Stat(p.sock); return err == nil }) {
		t.Fatalf("deltafs csi did not listen:\n%s", p.log())
	}
	p.conn, err = grpc.NewClient("unix://"+p.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	p.node = csipb.NewNodeClient(p.conn)
	return p
}

func (p *csiPlugin) kill() {
	if p.conn != nil {
		p.conn.Close()
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

func (p *csiPlugin) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// csiVolume is a publish request's varying parts.
type csiVolume struct {
	id       string
	target   string
	attrs    map[string]string
	secrets  map[string]string
	readOnly bool
	group    string // the pod's fsGroup (volume_mount_group)
}

func (p *csiPlugin) publish(v csiVolume) error { return p.publishWithin(v, 90*time.Second) }

// publishWithin is publish with the kubelet's deadline d.
func (p *csiPlugin) publishWithin(v csiVolume, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := p.node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
		VolumeId: v.id, TargetPath: v.target, Readonly: v.readOnly, VolumeContext: v.attrs, Secrets: v.secrets,
		VolumeCapability: &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{VolumeMountGroup: v.group}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		}})
	return err
}

func (p *csiPlugin) unpublish(v csiVolume) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := p.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: v.target})
	return err
}

// volumePID is the pid of the process serving target, from the plugin's
// record (what a restarted plugin reads too).
func (p *csiPlugin) volumePID(t *testing.T, target string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(p.stateDir, "volumes", "*.json"))
	for _, f := range files {
		var r struct {
			Target string `json:"target"`
			PID    int    `json:"pid"`
		}
		data, err := os.ReadFile(f)
		if err == nil && json.Unmarshal(data, &r) == nil && r.Target == target {
			return r.PID
		}
	}
	t.Fatalf("no record of %s in %s", target, p.stateDir)
	return 0
}

// isMountPoint reports whether dir is in /proc/self/mountinfo.
func isMountPoint(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// processGone reports whether pid has exited (or is a zombie).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// csiCleanup detaches target and kills pid when the test ends (after a
// failure; a passing test left neither).
func csiCleanup(t *testing.T, target string, pid int) {
	t.Cleanup(func() {
		detachMount(target)
		if pid > 0 && !processGone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// checkUnpublished checks that target is neither mounted nor present and
// that its process is gone.
func checkUnpublished(t *testing.T, target string, pid int) {
	t.Helper()
	if isMountPoint(t, target) {
		t.Errorf("%s is still mounted after NodeUnpublishVolume", target)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("target %s still exists after NodeUnpublishVolume (%v)", target, err)
	}
	if !eventually(5*time.Second, func() bool { return processGone(pid) }) {
		t.Errorf("volume process %d still runs after NodeUnpublishVolume", pid)
	}
}

// readVersion reads @latest of table name under target: its version and
// one data file's first bytes.
func readVersion(t *testing.T, target, name string) string {
	t.Helper()
	link, err := os.Readlink(filepath.Join(target, name, "@latest"))
	if err != nil {
		t.Fatalf("read through the target: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(target, name, link, "*.parquet"))
	more, _ := filepath.Glob(filepath.Join(target, name, link, "*", "*.parquet")) // partitions
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatalf("no data file in %s/%s", name, link)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !strings.HasPrefix(string(data), "PAR1") {
		t.Fatalf("read %s: %v (%d bytes)", files[0], err, len(data))
	}
	return link
}

// mustPublish publishes v and returns the pid of its process, which (and
// whose mount) the test's end clears if the test did not.
func (p *csiPlugin) mustPublish(t *testing.T, v csiVolume) int {
	t.Helper()
	if err := p.publish(v); err != nil {
		t.Fatalf("NodePublishVolume %s: %v\n%s", v.id, err, p.log())
	}
	pid := p.volumePID(t, v.target)
	csiCleanup(t, v.target, pid)
	return pid
}

// publishAndAppend publishes v (table "t" of fixtureAppend, at v1),
// reads @latest through the target, appends a file through its inbox and
// sees @latest move to v2. It returns the volume process's pid.
func (p *csiPlugin) publishAndAppend(t *testing.T, v csiVolume) int {
	t.Helper()
	pid := p.mustPublish(t, v)
	if got := readVersion(t, v.target, "t"); got != "@v1" {
		t.Errorf("@latest -> %s, want @v1", got)
	}
	if err := os.WriteFile(filepath.Join(v.target, "t", "inbox", "new.parquet"), inboxCases["unpartitioned"].data(t), 0o644); err != nil {
		t.Fatalf("append through the inbox of %s: %v", v.attrs["source"], err)
	}
	if got := readVersion(t, v.target, "t"); got != "@v2" {
		t.Errorf("after the append @latest -> %s, want @v2", got)
	}
	return pid
}

// TestCSIPublishLocal publishes a local table, reads it and appends
// through the inbox, publishes again (idempotent), unpublishes (nothing
// left) and unpublishes again; then the same table read-only.
func TestCSIPublishLocal(t *testing.T) {
	table := testenv.CopyFixture(t, fixtureAppend)
	metricsSock := filepath.Join(t.TempDir(), "metrics.sock")
	p := startCSI(t, t.TempDir(), nil, "--metrics-addr", "unix:"+metricsSock)
	v := csiVolume{id: "vol-local", target: filepath.Join(t.TempDir(), "pod", "mount"),
		attrs: map[string]string{"source": "t=" + table, "cache-size": "1G", "umask": "022",
			"csi.storage.k8s.io/pod.name": "reader"}}
	pid := p.publishAndAppend(t, v)
	if _, err := os.Stat(filepath.Join(table, "_delta_log", "00000000000000000002.json")); err != nil {
		t.Errorf("the append is not in the table: %v", err)
	}
	checkStatus(t, v)
	checkMetrics(t, metricsSock, `deltafs_csi_publish_total{result="ok"} 1`, `deltafs_csi_volumes 1`,
		`deltafs_commits_total{table="t",volume="vol-local"} 1`)
	if err := p.publish(v); err != nil {
		t.Errorf("NodePublishVolume again: %v", err)
	}
	other := v
	other.id = "vol-other"
	if err := p.publish(other); status.Code(err) != codes.AlreadyExists {
		t.Errorf("another volume at a served target: %v, want AlreadyExists", err)
	}
	if err := p.unpublish(v); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v\n%s", err, p.log())
	}
	checkUnpublished(t, v.target, pid)
	if err := p.unpublish(v); err != nil {
		t.Errorf("NodeUnpublishVolume of an unpublished target: %v", err)
	}
	if !strings.Contains(p.log(), "volume=vol-local") {
		t.Errorf("the log never names the volume:\n%s", p.log())
	}

	// Read-only, two tables from a config, the pod's fsGroup as the files' group.
	config := "tables:\n  - t=" + table + "\n  - name: p\n    url: " + testenv.Fixture(t, fixturePartitioned) + "\nsnapshot-cache: 64M\n"
	ro := csiVolume{id: "vol-ro", target: filepath.Join(t.TempDir(), "ro"), attrs: map[string]string{"config": config}, readOnly: true, group: "4242"}
	roPID := p.mustPublish(t, ro)
	readVersion(t, ro.target, "t")
	readVersion(t, ro.target, "p")
	if st, err := os.Stat(filepath.Join(ro.target, "t")); err != nil || st.Sys().(*syscall.Stat_t).Gid != 4242 {
		t.Errorf("the volume_mount_group is not the files' group: %v", err)
	}
	err := os.WriteFile(filepath.Join(ro.target, "t", "inbox", "new.parquet"), []byte("PAR1"), 0o644)
	if err == nil {
		t.Errorf("a readonly volume took a write into its inbox")
	}
	if err := p.unpublish(ro); err != nil {
		t.Fatalf("NodeUnpublishVolume readonly: %v", err)
	}
	checkUnpublished(t, ro.target, roPID)
}

// checkStatus reads the volume's status file through its target.
func checkStatus(t *testing.T, v csiVolume) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(v.target, ".deltafs-status.json"))
	if err != nil {
		t.Fatalf("status file: %v", err)
	}
	var st struct {
		Mount struct {
			Volume string `json:"volume"`
		} `json:"mount"`
	}
	if err := json.Unmarshal(data, &st); err != nil || st.Mount.Volume != v.id {
		t.Errorf("status file names volume %q (%v), want %q:\n%s", st.Mount.Volume, err, v.id, data)
	}
}

// checkMetrics scrapes the plugin's metrics on a Unix socket and checks
// that each line of want is there.
func checkMetrics(t *testing.T, socket string, want ...string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}}
	resp, err := c.Get("http://plugin/metrics")
	if err != nil {
		t.Fatalf("scrape the plugin: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, w := range want {
		if !strings.Contains(string(body), "\n"+w+"\n") {
			t.Errorf("the plugin's metrics lack %q", w)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// publishThenKillPlugin publishes a copy of fixtureAppend as volume id
// with a plugin on a fresh state dir, then kills the plugin (SIGKILL).
// It returns the state dir, the volume and the volume process's pid.
func publishThenKillPlugin(t *testing.T, id string) (string, csiVolume, int) {
	t.Helper()
	table := testenv.CopyFixture(t, fixtureAppend)
	state := t.TempDir()
	p := startCSI(t, state, nil)
	v := csiVolume{id: id, target: filepath.Join(t.TempDir(), "target"), attrs: map[string]string{"source": "t=" + table}}
	pid := p.mustPublish(t, v)
	p.kill()
	return state, v, pid
}

// TestCSILostVolume: a volume whose process died (killed) answers
// ENOTCONN or ECONNABORTED (the kernel's choice); a restarted plugin
// reports it lost; publishing it again mounts it afresh, and
// unpublishing leaves nothing.
func TestCSILostVolume(t *testing.T) {
	state, v, pid := publishThenKillPlugin(t, "vol-lost")
	syscall.Kill(pid, syscall.SIGKILL)
	if !eventually(5*time.Second, func() bool { return processGone(pid) }) {
		t.Fatalf("volume process %d survived SIGKILL", pid)
	}
	if _, err := os.Stat(filepath.Join(v.target, "t")); !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		t.Errorf("a volume whose process died: %v, want ENOTCONN or ECONNABORTED", err)
	}
	p2 := startCSI(t, state, nil)
	if !eventually(5*time.Second, func() bool { return strings.Contains(p2.log(), "volume lost its server") }) {
		t.Errorf("the restarted plugin did not report the lost volume:\n%s", p2.log())
	}
	pid2 := p2.mustPublish(t, v)
	readVersion(t, v.target, "t")
	if err := p2.unpublish(v); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v", err)
	}
	checkUnpublished(t, v.target, pid2)
}

// TestCSIBadRequests: missing fields, a source that is not a table,
// attributes a volume may not set and unknown secrets each fail with
// the spec's code and a reason, leaving nothing mounted or running.
func TestCSIBadRequests(t *testing.T) {
	p := startCSI(t, t.TempDir(), nil)
	notTable := t.TempDir()
	target := filepath.Join(t.TempDir(), "target")
	cases := []struct {
		name string
		v    csiVolume
		code codes.Code
		says string
	}{
		{"no volume id", csiVolume{target: target}, codes.InvalidArgument, "volume_id"},
		{"no target", csiVolume{id: "v"}, codes.InvalidArgument, "target_path"},
		{"target outside the pods dir", csiVolume{id: "v", target: "/var/lib/deltafs-outside/x", attrs: map[string]string{"source": notTable}}, codes.InvalidArgument, "pods directory"},
		{"relative target", csiVolume{id: "v", target: "pods/x", attrs: map[string]string{"source": notTable}}, codes.InvalidArgument, "target_path"},
		{"no source", csiVolume{id: "v", target: target, attrs: map[string]string{}}, codes.InvalidArgument, "source"},
		{"missing table", csiVolume{id: "v", target: target, attrs: map[string]string{"source": filepath.Join(notTable, "nope")}}, codes.NotFound, "nope"},
		{"not a table", csiVolume{id: "v", target: target, attrs: map[string]string{"source": "t=" + notTable}}, codes.NotFound, "_delta_log"},
		{"process flag", csiVolume{id: "v", target: target, attrs: map[string]string{"source": notTable, "log-file": "/etc/passwd"}}, codes.InvalidArgument, "log-file"},
		{"process flag in config", csiVolume{id: "v", target: target, attrs: map[string]string{"config": "tables: [" + notTable + "]\nmetrics-addr: :1\n"}}, codes.InvalidArgument, "metrics-addr"},
		{"bad size", csiVolume{id: "v", target: target, attrs: map[string]string{"source": notTable, "cache-size": "lots"}}, codes.InvalidArgument, "cache-size"},
		{"inline volume", csiVolume{id: "v", target: target, attrs: map[string]string{"source": notTable, "csi.storage.k8s.io/ephemeral": "true"}}, codes.InvalidArgument, "PersistentVolume"},
		{"unknown secret", csiVolume{id: "v", target: target, attrs: map[string]string{"source": notTable}, secrets: map[string]string{"PASSWORD": "x"}}, codes.InvalidArgument, "PASSWORD"},
	}
	for _, c := range cases {
		err := p.publish(c.v)
		if status.Code(err) != c.code || !strings.Contains(status.Convert(err).Message(), c.says) {
			t.Errorf("%s: %v; want %v saying %q", c.name, err, c.code, c.says)
		}
		if isMountPoint(t, target) {
			t.Fatalf("%s: the target is mounted after a failed publish", c.name)
		}
	}
	files, _ := filepath.Glob(filepath.Join(p.stateDir, "volumes", "*"))
	if len(files) != 0 {
		t.Errorf("failed publishes left %v", files)
	}
	if _, err := p.node.NodePublishVolume(context.Background(), &csipb.NodePublishVolumeRequest{VolumeId: "v", TargetPath: target}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("no capability: %v, want InvalidArgument", err)
	}
}

// TestCSIPublishGivenUp: a publish whose store never answers ends at the
// caller's deadline (DEADLINE_EXCEEDED) with its process ended and
// nothing mounted, so that the kubelet's retry starts clean.
func TestCSIPublishGivenUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accepts and never answers
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	p := startCSI(t, t.TempDir(), nil)
	v := csiVolume{id: "vol-stuck", target: filepath.Join(t.TempDir(), "target"),
		attrs:   map[string]string{"source": "t=s3://b/t?endpoint=http://" + l.Addr().String() + "&use_path_style=true&disable_https=true&region=us-east-1"},
		secrets: map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}}
	start := time.Now()
	if err := p.publishWithin(v, 2*time.Second); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("publish against a store that never answers: %v, want DeadlineExceeded", err)
	}
	if !eventually(10*time.Second, func() bool { return len(processesServing(v.target)) == 0 }) {
		t.Errorf("processes %v still serve %s %v after the deadline", processesServing(v.target), v.target, time.Since(start))
	}
	if isMountPoint(t, v.target) {
		t.Errorf("%s is mounted after a publish given up", v.target)
	}
}

// processesServing lists the pids whose last argument is target.
func processesServing(target string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if err == nil && args[len(args)-1] == target {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			if !processGone(pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestCSIPluginRestart kills the plugin (kill -9) between publish and
// unpublish: the volume stays served, the next plugin finds it and
// unpublishes it, leaving nothing.
func TestCSIPluginRestart(t *testing.T) {
	state, v, pid := publishThenKillPlugin(t, "vol-restart")
	readVersion(t, v.target, "t")
	if err := os.WriteFile(filepath.Join(v.target, "t", "inbox", "after-kill.parquet"), inboxCases["unpartitioned"].data(t), 0o644); err != nil {
		t.Errorf("append with the plugin gone: %v", err)
	}
	p2 := startCSI(t, state, nil)
	if !eventually(5*time.Second, func() bool { return strings.Contains(p2.log(), "volume still served") }) {
		t.Errorf("the restarted plugin did not report the volume:\n%s", p2.log())
	}
	if err := p2.publish(v); err != nil {
		t.Errorf("NodePublishVolume after the restart (kubelet retries): %v", err)
	}
	if err := p2.unpublish(v); err != nil {
		t.Fatalf("NodeUnpublishVolume after the restart: %v\n%s", err, p2.log())
	}
	checkUnpublished(t, v.target, pid)
}

// TestCSIPublishS3 publishes a table in S3 with its credentials in the
// request's secrets (the plugin's environment has none), reads and
// appends through the target, unpublishes. Without the secret the same
// volume fails: the node's credentials are not used.
func TestCSIPublishS3(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	if srv == nil {
		return
	}
	testenv.UploadDir(t, srv.URL, "warehouse/basic", testenv.Fixture(t, fixtureAppend))
	var env []string // the test's environment with the node's credentials
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	p := startCSI(t, t.TempDir(), append(env, "AWS_ACCESS_KEY_ID="+srv.Env["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY="+srv.Env["AWS_SECRET_ACCESS_KEY"]))
	v := csiVolume{id: "vol-s3", target: filepath.Join(t.TempDir(), "target"),
		attrs: map[string]string{"source": "t=" + srv.BucketURL("warehouse/basic")}}
	if err := p.publish(v); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "nodePublishSecretRef") {
		t.Errorf("publish without a secret, the node holding credentials: %v; want NotFound naming nodePublishSecretRef", err)
	}
	v.secrets = map[string]string{"AWS_ACCESS_KEY_ID": srv.Env["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": srv.Env["AWS_SECRET_ACCESS_KEY"]}
	pid := p.publishAndAppend(t, v)
	if err := p.unpublish(v); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v", err)
	}
	checkUnpublished(t, v.target, pid)
}

// procFds counts the open descriptors of process pid.
func procFds(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Scraping the plugin's metrics, which scrapes every volume's, leaves no
// connection behind on either side: 1,000 scrapes keep the descriptors
// of the plugin and of the volume's process flat.
func TestCSIMetricsScrapesLeaveNothingOpen(t *testing.T) {
	table := testenv.CopyFixture(t, fixtureAppend)
	metricsSock := filepath.Join(t.TempDir(), "metrics.sock")
	p := startCSI(t, t.TempDir(), nil, "--metrics-addr", "unix:"+metricsSock)
	v := csiVolume{id: "vol-scraped", target: filepath.Join(t.TempDir(), "mount"), attrs: map[string]string{"source": "t=" + table}}
	pid := p.mustPublish(t, v)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", metricsSock)
		}}}
	scrape := func() {
		resp, err := c.Get("http://plugin/metrics")
		if err != nil {
			t.Fatalf("scrape the plugin: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `volume="vol-scraped"`) {
			t.Fatalf("the plugin's metrics lack the volume's:\n%s", body)
		}
	}
	for range 10 {
		scrape()
	}
	plugin0, volume0 := procFds(t, p.cmd.Process.Pid), procFds(t, pid)
	for range 1000 {
		scrape()
	}
	plugin1, volume1 := procFds(t, p.cmd.Process.Pid), procFds(t, pid)
	if plugin1 > plugin0+4 || volume1 > volume0+4 {
		t.Errorf("after 1,000 scrapes: the plugin holds %d descriptors (%d before), the volume's process %d (%d before)",
			plugin1, plugin0, volume1, volume0)
	}
}

// The plugin mounts and unmounts only what it publishes: a target that
// holds files is refused, and unpublishing a target it never published
// leaves whatever file system is there mounted; a target whose path leads
// out of the pods directory through a symbolic link is refused.
func TestCSITargetsAreThePluginsOwn(t *testing.T) {
	table := testenv.CopyFixture(t, fixtureAppend)
	p := startCSI(t, t.TempDir(), nil)
	full := filepath.Join(t.TempDir(), "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := csiVolume{id: "v", target: full, attrs: map[string]string{"source": "t=" + table}}
	if err := p.publish(v); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("publish onto a directory holding a file: %v, want FailedPrecondition", err)
	}
	if isMountPoint(t, full) {
		t.Fatal("a volume was mounted over files")
	}
	if _, err := os.Stat(filepath.Join(full, "keep")); err != nil {
		t.Errorf("the file under the refused target: %v", err)
	}

	other := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", other, "tmpfs", 0, "size=1m"); err != nil {
		testenv.Skip(t, "mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(other, syscall.MNT_DETACH) })
	if err := p.unpublish(csiVolume{id: "v", target: other}); err != nil {
		t.Errorf("unpublish of a target never published: %v", err)
	}
	if !isMountPoint(t, other) {
		t.Error("unpublish of a target never published unmounted the tmpfs there")
	}
	if err := p.unpublish(csiVolume{id: "v", target: "relative/target"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("unpublish of a relative path: %v, want InvalidArgument", err)
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink("/var/lib", link); err != nil {
		t.Fatal(err)
	}
	if err := p.publish(csiVolume{id: "v", target: filepath.Join(link, "pod"), attrs: map[string]string{"source": "t=" + table}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("publish through a link out of the pods dir: %v, want InvalidArgument", err)
	}
	if _, err := os.Stat("/var/lib/pod"); err == nil {
		t.Error("the publish made /var/lib/pod")
	}
}
