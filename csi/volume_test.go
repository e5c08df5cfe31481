package csi

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnvKeepsNodeCredentialsOut: a volume's process gets its secrets
// and none of the node's credentials, unless the volume opts in.
func TestEnvKeepsNodeCredentialsOut(t *testing.T) {
	base := []string{"PATH=/bin", "AWS_ACCESS_KEY_ID=node", "AWS_PROFILE=node", "AZURE_CLIENT_ID=node",
		"GOOGLE_APPLICATION_CREDENTIALS=/node.json", "IDENTITY_ENDPOINT=http://node"}
	v := &Volume{Dir: t.TempDir(), Secrets: map[string]string{"AWS_ACCESS_KEY_ID": "vol", "AWS_SECRET_ACCESS_KEY": "s",
		gcpKeyJSON: `{"type":"service_account"}`}}
	env, err := v.Env(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		if strings.HasSuffix(kv, "=node") || strings.Contains(kv, "node.json") || strings.Contains(kv, "http://node") {
			t.Errorf("the node's %s reached the volume", kv)
		}
	}
	for _, want := range []string{"PATH=/bin", "AWS_ACCESS_KEY_ID=vol", "AWS_SECRET_ACCESS_KEY=s", "AWS_EC2_METADATA_DISABLED=true",
		"GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(v.Dir, "gcp-key.json")} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	if st, err := os.Stat(filepath.Join(v.Dir, "gcp-key.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the GCP key file: %v, %v", st, err)
	}

	v = &Volume{Dir: t.TempDir(), Attributes: map[string]string{AttrNodeCredentials: "true"}}
	if env, err := v.Env(base); err != nil || !slices.Equal(env, base) {
		t.Errorf("nodeCredentials: true: %v, %v; want the node's environment", env, err)
	}
	for _, bad := range []*Volume{
		{Secrets: map[string]string{"password": "hunter2"}},
		{Attributes: map[string]string{AttrNodeCredentials: "yes"}},
	} {
		bad.Dir = t.TempDir()
		_, err := bad.Env(base)
		if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: %v; want ErrInvalid without the secret's value", bad, err)
		}
	}
}

func TestSocketPath(t *testing.T) {
	for in, want := range map[string]string{"unix:///csi/csi.sock": "/csi/csi.sock", "unix:/csi/csi.sock": "/csi/csi.sock", "unix://rel/csi.sock": "rel/csi.sock"} {
		if got, err := socketPath(in); err != nil || got != want {
			t.Errorf("socketPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"tcp://127.0.0.1:1", "/csi/csi.sock", "unix://"} {
		if _, err := socketPath(bad); err == nil {
			t.Errorf("socketPath(%q): no error", bad)
		}
	}
}
