package integration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/deltafs/deltafs/csi"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// TestKubernetesManifests parses every manifest under deploy/kubernetes:
// each document is an object with apiVersion, kind and a name, and the
// pieces agree with the plugin (the driver's name, its socket, the
// volume attributes it takes, the binary the Dockerfile copies).
func TestKubernetesManifests(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "deploy", "kubernetes")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	kinds := map[string][]map[string]any{}
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			kind, _ := doc["kind"].(string)
			meta, _ := doc["metadata"].(map[string]any)
			if doc["apiVersion"] == nil || kind == "" || meta["name"] == nil {
				t.Errorf("%s: a document without apiVersion, kind or metadata.name: %v", filepath.Base(f), doc)
			}
			kinds[kind] = append(kinds[kind], doc)
		}
	}
	for _, k := range []string{"CSIDriver", "DaemonSet", "ServiceAccount", "PersistentVolume", "PersistentVolumeClaim", "Pod", "Secret"} {
		if len(kinds[k]) == 0 {
			t.Errorf("no %s in %s", k, dir)
		}
	}
	if name := dig(kinds["CSIDriver"][0], "metadata", "name"); name != csi.DefaultName {
		t.Errorf("CSIDriver %v, want %s", name, csi.DefaultName)
	}
	pv := kinds["PersistentVolume"][0]
	if d := dig(pv, "spec", "csi", "driver"); d != csi.DefaultName {
		t.Errorf("the PersistentVolume's driver is %v, want %s", d, csi.DefaultName)
	}
	if src, _ := dig(pv, "spec", "csi", "volumeAttributes", "source").(string); src == "" {
		t.Errorf("the example PersistentVolume has no source attribute")
	}
	ds, _ := yaml.Marshal(kinds["DaemonSet"][0])
	for _, want := range []string{"--endpoint=unix:///csi/csi.sock", "/var/lib/kubelet/plugins/" + csi.DefaultName + "/csi.sock", "mountPropagation: Bidirectional", "privileged: true"} {
		if !bytes.Contains(ds, []byte(want)) {
			t.Errorf("the DaemonSet lacks %q", want)
		}
	}
	docker, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil || !strings.Contains(string(docker), "COPY dist/linux-${TARGETARCH}/deltafs") {
		t.Errorf("the Dockerfile does not copy make dist's binary (%v)", err)
	}
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// dig follows keys down nested maps.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
