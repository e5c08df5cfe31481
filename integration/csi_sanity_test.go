package integration

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// TestCSISanity runs csi-sanity (kubernetes-csi/csi-test) against
// `deltafs csi`. The plugin is node-only (static volumes); the sanity
// node tests that publish a volume get it from sanityController, a
// stand-in for the cluster's PersistentVolumes whose every volume is a
// copy of a fixture table.
func TestCSISanity(t *testing.T) {
	p := startCSI(t, t.TempDir(), nil)
	table := testenv.CopyFixture(t, fixtureAppend)
	ctrlSock := filepath.Join(t.TempDir(), "controller.sock")
	l, err := net.Listen("unix", ctrlSock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	csipb.RegisterControllerServer(s, &sanityController{source: "t=" + table})
	csipb.RegisterIdentityServer(s, sanityIdentity{})
	go s.Serve(l)
	t.Cleanup(s.Stop)

	cfg := sanity.NewTestConfig()
	cfg.Address = p.sock
	cfg.ControllerAddress = ctrlSock
	dir := t.TempDir()
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	sanity.Test(t, cfg)
}

// sanityController creates "volumes" that are the one table source.
type sanityController struct {
	csipb.UnimplementedControllerServer
	source string
}

func (c *sanityController) CreateVolume(_ context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "sanity-" + req.GetName(),
		VolumeContext: map[string]string{"source": c.source}}}, nil
}

func (c *sanityController) DeleteVolume(context.Context, *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	return &csipb.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities is the one controller call every
// controller must serve (sanity checks it): it knows the volumes it made.
func (c *sanityController) ValidateVolumeCapabilities(_ context.Context, req *csipb.ValidateVolumeCapabilitiesRequest) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id missing")
	case len(req.GetVolumeCapabilities()) == 0:
		return nil, status.Error(codes.InvalidArgument, "volume_capabilities missing")
	case !strings.HasPrefix(req.GetVolumeId(), "sanity-"):
		return nil, status.Error(codes.NotFound, "no such volume")
	}
	return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters()}}, nil
}

// ControllerGetCapabilities offers nothing, so that the sanity tests of
// controllers (which the plugin is not) skip.
func (c *sanityController) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	return &csipb.ControllerGetCapabilitiesResponse{}, nil
}

// sanityIdentity is the stand-in controller's identity (sanity checks
// the controller endpoint's too).
type sanityIdentity struct {
	csipb.UnimplementedIdentityServer
}

func (sanityIdentity) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: "sanity.deltafs.io", VendorVersion: "0"}, nil
}

func (sanityIdentity) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return &csipb.GetPluginCapabilitiesResponse{}, nil
}

func (sanityIdentity) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}
