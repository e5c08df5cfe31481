package csi

// Volume: a publish request as the Mounter needs it, and the names of a
// target's record and directory.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Volume is one NodePublishVolume request as the Mounter needs it.
type Volume struct {
	ID     string
	Target string
	// ReadOnly: the request's readonly field or a reader-only access
	// mode; the mount then has no inbox and the kernel refuses writes.
	ReadOnly bool
	// Attributes is the volume_context without the keys Kubernetes adds
	// about the pod (csi.storage.k8s.io/...): `source`, `config` and
	// mount flags; the Mounter checks them.
	Attributes map[string]string
	// Secrets is the request's secrets (nodePublishSecretRef), checked by
	// Env.
	Secrets map[string]string
	// MountGroup is the pod's fsGroup (volume_mount_group), "" if none.
	MountGroup string
	// Dir is this target's own directory under the state dir (cache,
	// metrics socket, credential files), removed at unpublish.
	Dir string
}

// AttrNodeCredentials is the volume attribute that lets the volume's
// process use the node's (the plugin's) own cloud credentials.
const AttrNodeCredentials = "nodeCredentials"

// podInfoPrefix marks the volume_context keys Kubernetes adds
// (podInfoOnMount, ephemeral volumes); they are not attributes.
const podInfoPrefix = "csi.storage.k8s.io/"

// targetKey names a target's record and directory.
func targetKey(target string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(target)))
	return hex.EncodeToString(sum[:8])
}

// attributes drops the keys Kubernetes adds.
func attributes(ctx map[string]string) map[string]string {
	out := make(map[string]string, len(ctx))
	for k, v := range ctx {
		if !strings.HasPrefix(k, podInfoPrefix) {
			out[k] = v
		}
	}
	return out
}

// secretEnv are the secret keys accepted, each set in the volume
// process's environment as is. gcpKeyJSON is written to a file instead.
var secretEnv = map[string]bool{
	"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true, "AWS_REGION": true,
	"AZURE_STORAGE_ACCOUNT": true, "AZURE_STORAGE_KEY": true, "AZURE_STORAGE_SAS_TOKEN": true,
	"AZURE_STORAGE_CONNECTION_STRING": true, "STORAGE_EMULATOR_HOST": true,
}

// gcpKeyJSON is the secret key holding a Google service account key
// (JSON); the process gets GOOGLE_APPLICATION_CREDENTIALS naming a 0600
// copy in the volume's Dir.
const gcpKeyJSON = "GOOGLE_APPLICATION_CREDENTIALS_JSON"

// nodeCredentialEnv are the prefixes and names of the environment through
// which a process finds the node's own identity; a volume process gets
// none of them unless its volume sets nodeCredentials: "true".
var nodeCredentialEnv = []string{"AWS_", "AZURE_", "GOOGLE_", "GCE_", "CLOUDSDK_", "STORAGE_EMULATOR_HOST",
	"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET"}

// Env returns the volume process's environment: base (the plugin's) with
// the volume's secrets, and, unless the volume opts in with
// nodeCredentials: "true", without any of the node's credentials and
// with the instance metadata endpoints of AWS, GCP and Azure made
// unreachable, so that a volume without a secret never reads with the
// node's identity. A secret key deltafs does not know is an ErrInvalid
// naming the key (never its value).
func (v *Volume) Env(base []string) ([]string, error) {
	keys := make([]string, 0, len(v.Secrets))
	for k := range v.Secrets {
		if !secretEnv[k] && k != gcpKeyJSON {
			return nil, fmt.Errorf("%w: secret key %q is not one deltafs uses (want %s or %s)", ErrInvalid, k, strings.Join(sortedKeys(secretEnv), ", "), gcpKeyJSON)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	node := false
	switch a := v.Attributes[AttrNodeCredentials]; a {
	case "", "false":
	case "true":
		node = true
	default:
		return nil, fmt.Errorf("%w: %s: want \"true\" or \"false\", got %q", ErrInvalid, AttrNodeCredentials, a)
	}
	env := base
	if !node {
		env = withoutNodeCredentials(base, v.Dir)
	}
	for _, k := range keys {
		if k == gcpKeyJSON {
			path := filepath.Join(v.Dir, "gcp-key.json")
			if err := os.WriteFile(path, []byte(v.Secrets[k]), 0o600); err != nil {
				return nil, err
			}
			env = append(env, "GOOGLE_APPLICATION_CREDENTIALS="+path)
			continue
		}
		env = append(env, k+"="+v.Secrets[k])
	}
	return env, nil
}

// withoutNodeCredentials drops the node's credential variables from base
// and points every SDK's fallback (config files, instance metadata) at
// nothing.
func withoutNodeCredentials(base []string, dir string) []string {
	var env []string
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, p := range nodeCredentialEnv {
			drop = drop || strings.HasPrefix(name, p)
		}
		if !drop {
			env = append(env, kv)
		}
	}
	none := filepath.Join(dir, "no-node-credentials")
	return append(env,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none,
		"CLOUDSDK_CONFIG="+none, "GCE_METADATA_HOST=127.0.0.1:1",
		"IDENTITY_ENDPOINT=http://127.0.0.1:1/", "IDENTITY_HEADER=none")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
