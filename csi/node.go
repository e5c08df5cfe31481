package csi

// The CSI Node service: publish, unpublish and stats of volumes, checked
// as the spec asks.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodeGetInfo names the node; volumes are not limited per node.
func (d *Driver) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: d.opts.NodeID}, nil
}

// NodeGetCapabilities: VOLUME_MOUNT_GROUP, so that Kubernetes passes a
// pod's fsGroup (the files' group) instead of chown-ing every file of
// the mount, which a snapshot tree refuses.
func (d *Driver) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	c := &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{
		Rpc: &csipb.NodeServiceCapability_RPC{Type: csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP}}}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: []*csipb.NodeServiceCapability{c}}, nil
}

// NodePublishVolume mounts the volume's tables at the target path and
// returns once the kernel serves them. Publishing again what is served
// there is a success; a different volume or access at a served target is
// ALREADY_EXISTS. A source that is not a readable table is NOT_FOUND
// with the reason, and nothing stays mounted.
func (d *Driver) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	v, err := checkPublish(req)
	if err != nil {
		return nil, err
	}
	if err := d.checkTarget(v.Target); err != nil {
		return nil, err
	}
	if !d.begin(v.Target) {
		return nil, status.Errorf(codes.Aborted, "an operation on target %s is in progress", v.Target)
	}
	defer d.end(v.Target)
	v.Dir = d.volumeDir(v.Target)
	served, err := d.alreadyServed(v)
	if served || err != nil {
		return &csipb.NodePublishVolumeResponse{}, err
	}
	if err := os.MkdirAll(v.Dir, 0o700); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if err := os.MkdirAll(v.Target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: target: %v", v.ID, err)
	}
	if ents, err := os.ReadDir(v.Target); err != nil || len(ents) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s: target %s is not an empty directory (%d entries, %v): a volume is never mounted over files", v.ID, v.Target, len(ents), err)
	}
	start := time.Now()
	pid, err := d.opts.Mounter.Mount(ctx, v)
	if err != nil {
		d.metrics.published(err)
		// A process that mounted and then failed (or was ended by ctx)
		// may leave its mount behind: nothing stays mounted.
		d.opts.Mounter.Unmount(context.WithoutCancel(ctx), v.Target, 0)
		os.RemoveAll(v.Dir)
		return nil, publishError(v, err)
	}
	r := &record{VolumeID: v.ID, Target: v.Target, PID: pid, ReadOnly: v.ReadOnly, Source: v.Attributes["source"], Published: time.Now().UTC()}
	if err := d.saveRecord(r); err != nil {
		d.opts.Mounter.Unmount(context.WithoutCancel(ctx), v.Target, pid)
		return nil, status.Errorf(codes.Internal, "volume %s: save its record: %v (unmounted)", v.ID, err)
	}
	d.metrics.published(nil)
	d.log.Info("csi: volume published", "volume", v.ID, "target", v.Target, "readOnly", v.ReadOnly, "pid", pid, "took", time.Since(start).Round(time.Millisecond))
	return &csipb.NodePublishVolumeResponse{}, nil
}

// checkPublish checks a publish request's fields (INVALID_ARGUMENT).
func checkPublish(req *csipb.NodePublishVolumeRequest) (*Volume, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id missing")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "target_path missing")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability missing")
	case req.GetVolumeCapability().GetBlock() != nil:
		return nil, status.Error(codes.InvalidArgument, "deltafs volumes are file systems: block access is not supported")
	case !filepath.IsAbs(req.GetTargetPath()):
		return nil, status.Errorf(codes.InvalidArgument, "target_path %q is not absolute", req.GetTargetPath())
	case req.GetVolumeContext()[podInfoPrefix+"ephemeral"] == "true":
		// An inline volume is written by whoever writes the pod: it could
		// name any path on the node, or ask for the node's identity.
		return nil, status.Error(codes.InvalidArgument, "inline (ephemeral) volumes are not supported: use a PersistentVolume, which an administrator writes")
	}
	v := &Volume{ID: req.GetVolumeId(), Target: filepath.Clean(req.GetTargetPath()), ReadOnly: req.GetReadonly(),
		Attributes: attributes(req.GetVolumeContext()), Secrets: req.GetSecrets()}
	switch req.GetVolumeCapability().GetAccessMode().GetMode() {
	case csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:
		v.ReadOnly = true
	}
	if m := req.GetVolumeCapability().GetMount(); m != nil {
		v.MountGroup = m.GetVolumeMountGroup()
		if t := m.GetFsType(); t != "" && t != "deltafs" && t != "fuse.deltafs" {
			return nil, status.Errorf(codes.InvalidArgument, "fs_type %q: deltafs volumes are deltafs", t)
		}
	}
	return v, nil
}

// alreadyServed decides what an existing record or mount at v.Target
// means: the same volume served there (true: nothing to do), another
// one (ALREADY_EXISTS), or what is left of a publish whose server died
// (cleaned up: false).
func (d *Driver) alreadyServed(v *Volume) (bool, error) {
	r, err := d.loadRecord(v.Target)
	if err != nil {
		return false, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if r == nil {
		if isMountPoint(v.Target) {
			return false, status.Errorf(codes.AlreadyExists, "target %s already holds a mount this plugin did not make", v.Target)
		}
		return false, nil
	}
	if d.opts.Mounter.Alive(r.PID, r.Target) {
		if r.VolumeID != v.ID {
			return false, status.Errorf(codes.AlreadyExists, "target %s serves volume %s, not %s", v.Target, r.VolumeID, v.ID)
		}
		if r.ReadOnly != v.ReadOnly {
			return false, status.Errorf(codes.AlreadyExists, "volume %s is published at %s with readOnly=%v", v.ID, v.Target, r.ReadOnly)
		}
		return true, nil
	}
	d.log.Warn("csi: republishing a volume whose server is gone", "volume", r.VolumeID, "target", r.Target, "pid", r.PID)
	if err := d.opts.Mounter.Unmount(context.Background(), r.Target, r.PID); err != nil {
		return false, status.Errorf(codes.Internal, "volume %s: clear the dead mount at %s: %v", v.ID, v.Target, err)
	}
	return false, d.removeRecord(v.Target)
}

// publishError maps a Mounter error to the spec's codes, naming the volume.
func publishError(v *Volume, err error) error {
	switch {
	case errors.Is(err, ErrInvalid):
		return status.Errorf(codes.InvalidArgument, "volume %s: %v", v.ID, err)
	case errors.Is(err, ErrUnreadable):
		return status.Errorf(codes.NotFound, "volume %s: %v", v.ID, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.DeadlineExceeded, "volume %s: %v", v.ID, err)
	}
	return status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
}

// NodeUnpublishVolume unmounts the target, waits for its process to exit
// and removes the target directory. A target that is not mounted (never
// published, or unpublished already) is a success.
func (d *Driver) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id missing")
	}
	if req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "target_path missing")
	}
	target := filepath.Clean(req.GetTargetPath())
	if err := d.checkTarget(target); err != nil {
		return nil, err
	}
	if !d.begin(target) {
		return nil, status.Errorf(codes.Aborted, "an operation on target %s is in progress", target)
	}
	defer d.end(target)
	r, err := d.loadRecord(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", req.GetVolumeId(), err)
	}
	if r == nil {
		// Nothing this plugin published: whatever is there (another
		// file system, files) is left as it is.
		if !isMountPoint(target) {
			os.Remove(target) // only if it is an empty directory
		} else {
			d.log.Warn("csi: unpublish of a target this plugin did not publish: left mounted", "volume", req.GetVolumeId(), "target", target)
		}
		d.metrics.unpublished(nil)
		return &csipb.NodeUnpublishVolumeResponse{}, nil
	}
	pid := r.PID
	if err := d.opts.Mounter.Unmount(ctx, target, pid); err != nil {
		d.metrics.unpublished(err)
		return nil, status.Errorf(codes.Internal, "volume %s: %v", req.GetVolumeId(), err)
	}
	if err := d.removeRecord(target); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", req.GetVolumeId(), err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "volume %s: remove target: %v", req.GetVolumeId(), err)
	}
	d.metrics.unpublished(nil)
	d.log.Info("csi: volume unpublished", "volume", req.GetVolumeId(), "target", target, "pid", pid)
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// checkTarget refuses (INVALID_ARGUMENT) a target that is not an absolute
// path under the kubelet's pods directory, or whose existing part leads
// out of it through a symbolic link: a request never makes the plugin
// mount or unmount anywhere else on the node.
func (d *Driver) checkTarget(target string) error {
	root := d.opts.PodsDir
	if !filepath.IsAbs(target) || !strings.HasPrefix(filepath.Clean(target), root+string(filepath.Separator)) {
		return status.Errorf(codes.InvalidArgument, "target_path %q is not an absolute path under the kubelet's pods directory %s", target, root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "the kubelet's pods directory %s: %v", root, err)
	}
	for p := filepath.Clean(target); p != root; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // not there yet: its parent decides
		}
		if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
			return status.Errorf(codes.InvalidArgument, "target_path %q leads out of the kubelet's pods directory (to %s)", target, real)
		}
		break
	}
	return nil
}

// isMountPoint reports whether dir is a mount point (of any file system;
// a FUSE mount whose server is gone counts): its device differs from its
// parent's, or it cannot be stat-ed for a reason other than its absence.
func isMountPoint(dir string) bool {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return !errors.Is(err, syscall.ENOENT)
	}
	if err := syscall.Stat(filepath.Dir(dir), &parent); err != nil {
		return false
	}
	return st.Dev != parent.Dev
}
