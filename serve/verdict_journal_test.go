package serve

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta"
)

// A second mount with the first one's journal stats every file without
// reading a footer: its sizes, from the journal, are the first mount's
// (files served as stored and files reshaped alike), though its data
// files cannot be opened at all. Without the journal the same stats fail.
func TestVerdictJournalSkipsFooters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "verdicts.journal")
	j1, err := OpenVerdictJournal(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl1, snap := openFixture(t, "delta-kernel-rs/golden-log-replay-latest-metadata-protocol", Options{Verdicts: j1})
	tbl1.verdicts = newVerdictCache(maxVerdicts)
	files, err := snap.LiveFiles()
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	reshaped := 0
	for i := range files {
		n, err := tbl1.Size(context.Background(), snap, &files[i])
		if err != nil {
			t.Fatal(err)
		}
		sizes[files[i].Key] = n
		if n != files[i].Add.Size {
			reshaped++
		}
	}
	if reshaped == 0 || reshaped == len(files) {
		t.Fatalf("%d of %d files reshaped: want both kinds", reshaped, len(files))
	}
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}

	for _, withJournal := range []bool{true, false} {
		p := path
		if !withJournal {
			p = filepath.Join(t.TempDir(), "empty.journal")
		}
		j2, err := OpenVerdictJournal(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		tbl2, _ := openFixture(t, "delta-kernel-rs/golden-log-replay-latest-metadata-protocol", Options{Verdicts: j2})
		tbl2.verdicts = newVerdictCache(maxVerdicts)
		tbl2.root = &localRoot{dir: filepath.Join(t.TempDir(), "gone")} // no footer can be read
		failed := 0
		for i := range files {
			n, err := tbl2.Size(context.Background(), snap, &files[i])
			if err != nil {
				failed++
				continue
			}
			if n != sizes[files[i].Key] {
				t.Errorf("journal %v: %s: size %d, the first mount's %d", withJournal, files[i].Key, n, sizes[files[i].Key])
			}
		}
		if withJournal && failed > 0 {
			t.Errorf("with the journal, %d of %d stats still needed a footer", failed, len(files))
		}
		if !withJournal && failed == 0 {
			t.Error("without the journal, stats of unreadable files succeeded: the test cannot tell")
		}
		j2.Close()
	}
}

// Records torn by a crash, or damaged, are skipped; the others read back,
// and the journal is rewritten compacted when opened.
func TestVerdictJournalSkipsBadRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "verdicts.journal")
	j, err := OpenVerdictJournal(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := stableVerdict{1}, stableVerdict{2}, stableVerdict{3}
	j.put(a, servedAsStored)
	j.put(b, 12345)
	j.put(b, 12346) // a later verdict wins
	j.put(c, 7)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 4*verdictRecord {
		t.Fatalf("journal of %d bytes, want 4 records", len(data))
	}
	data[3*verdictRecord+20] ^= 0xff               // c's record damaged
	data = append(data, data[:verdictRecord-5]...) // a torn record at the end
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err = OpenVerdictJournal(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if n, ok := j.get(a); !ok || n != servedAsStored {
		t.Errorf("a: %d, %v", n, ok)
	}
	if n, ok := j.get(b); !ok || n != 12346 {
		t.Errorf("b: %d, %v; want the later verdict", n, ok)
	}
	if _, ok := j.get(c); ok {
		t.Error("a damaged record was read")
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 2*verdictRecord {
		t.Errorf("compacted journal: %v, %v; want 2 records", st.Size(), err)
	}
}

// TestStableVerdictKeyIsTheJournalsKey pins the journal's key to the bytes earlier releases
// hashed (each part after its length, the DV's id last, the first 16 bytes of SHA-256), so that a
// journal written before still finds its verdicts.
func TestStableVerdictKeyIsTheJournalsKey(t *testing.T) {
	ref := func(store, key string, a *delta.Add, sum, mapping string) stableVerdict {
		h := sha256.New()
		var n [16]byte
		binary.LittleEndian.PutUint64(n[:8], uint64(a.Size))
		binary.LittleEndian.PutUint64(n[8:], uint64(a.ModificationTime))
		for _, part := range [][]byte{[]byte("deltafs-verdict/v1"), []byte(store), []byte(key), n[:], []byte(sum), []byte(mapping)} {
			h.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(part))))
			h.Write(part)
		}
		if a.DeletionVector != nil {
			h.Write([]byte(a.DeletionVector.UniqueID()))
		}
		var k stableVerdict
		copy(k[:], h.Sum(nil))
		return k
	}
	off := int32(4)
	long := strings.Repeat("p=a/", 200) + "part-0.parquet" // past the stack buffer
	for _, c := range []struct {
		key, mapping string
		a            *delta.Add
	}{
		{"x=1/part-0.parquet", "", &delta.Add{Size: 1234, ModificationTime: 1767225600000}},
		{"part-1.parquet", "name", &delta.Add{Size: 1 << 40, ModificationTime: -1}},
		{long, "id", &delta.Add{Size: 7, DeletionVector: &delta.DeletionVector{StorageType: "u", PathOrInlineDV: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &off, SizeInBytes: 40, Cardinality: 3}}},
	} {
		s := &snapShape{sum: "shape-sum"}
		if got, want := stableVerdictKey("file:///t", c.key, c.a, s, c.mapping), ref("file:///t", c.key, c.a, s.sum, c.mapping); got != want {
			t.Errorf("%.40s: key %x, the journal's is %x", c.key, got, want)
		}
	}
	a := &delta.Add{Size: 1}
	if stableVerdictKey("s", "k", a, &snapShape{sum: "1"}, "") == stableVerdictKey("s", "k", a, &snapShape{sum: "2"}, "") {
		t.Error("two shapes, one key")
	}
}
