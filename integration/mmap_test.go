package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// TestMountMmap maps every live file of the DV and column-mapped tables
// (stored files, served through passthrough or the page cache, and small
// rewritten ones, through the page cache too) and compares the mapped
// bytes with what read(2) returns: tools that mmap Parquet files (Arrow's
// memory_map, Polars) must see the same file.
func TestMountMmap(t *testing.T) {
	for _, noPT := range []bool{false, true} {
		mnt := mountFixtures(t, mount.Config{NoPassthrough: noPT})
		mapped, rewritten := 0, 0
		for name, fixture := range map[string]string{"dv": fixtureDV, "cm": fixtureCM} {
			root := testenv.Fixture(t, fixture)
			for p, f := range liveFiles(t, latestSnapshot(t, root)) {
				path := filepath.Join(mnt, name, "@latest", p)
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("read %s: %v", path, err)
				}
				if got := mmapFile(t, path); !bytes.Equal(got, want) {
					t.Errorf("noPassthrough=%v %s/%s: %d mapped bytes differ from the %d read", noPT, name, p, len(got), len(want))
				}
				mapped++
				if f.Add.DeletionVector != nil || name == "cm" {
					rewritten++
				}
			}
		}
		if mapped < 4 || rewritten < 2 {
			t.Errorf("mapped %d files, %d of them rewritten: the fixtures changed?", mapped, rewritten)
		}
	}
}

// TestMountMmapLargeRewritten maps a rewritten file of 3 MiB: a rewritten
// file of 1 MiB or more is served with FOPEN_DIRECT_IO (smaller ones go
// through the page cache, as TestMountMmap's fixtures do), which keeps
// mmap working only where the kernel allows it (FUSE_DIRECT_IO_ALLOW_MMAP).
func TestMountMmapLargeRewritten(t *testing.T) {
	root := t.TempDir()
	rows, deleted := writeBigDVTable(t, root)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	path := filepath.Join(mnt, "t", "@latest", "part-00000-big.parquet")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 1<<20 {
		t.Fatalf("the rewritten file has %d bytes: not a large one", len(want))
	}
	checkLiveRows(t, want, rows, deleted)
	if got := mmapFile(t, path); !bytes.Equal(got, want) {
		t.Errorf("%d mapped bytes differ from the %d read", len(got), len(want))
	}
}

// mmapChildEnv names the file a child test process maps (see mmapFile).
const mmapChildEnv = "DELTAFS_TEST_MMAP_FILE"

// mmapFile returns the bytes of the file at path as a shared read-only
// mapping sees them. The mapping is read in a child process: a page fault
// on a FUSE file waits for the FUSE server, and with the server in this
// process the fault could stall a garbage collection that needs the
// faulting thread to stop, which would deadlock the test.
func mmapFile(t *testing.T, path string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMmapChild$")
	cmd.Env = append(os.Environ(), mmapChildEnv+"="+path)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("mmap %s in a child: %v: %s", path, err, errOut.String())
	}
	return out.Bytes()
}

// TestMmapChild is the child of mmapFile: it maps the file named by the
// environment and writes the mapped bytes to stdout. Without the variable
// it does nothing.
func TestMmapChild(t *testing.T) {
	path := os.Getenv(mmapChildEnv)
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		fmt.Fprintln(os.Stderr, "stat:", err, st.Size())
		os.Exit(2)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mmap:", err)
		os.Exit(2)
	}
	os.Stdout.Write(m)
	os.Exit(0)
}
