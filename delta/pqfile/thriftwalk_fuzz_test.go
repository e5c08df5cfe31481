package pqfile

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzThriftWalk feeds arbitrary bytes to the compact-protocol walker and the statistics editor
// as a footer. Nothing may panic; errors are ErrCorrupt; when stripping succeeds, its output
// walks again, ends where it should, and the edited chunks lack what was stripped.
func FuzzThriftWalk(f *testing.F) {
	f.Add(rawFooter(f, ncFile(f)))
	f.Add(rawFooter(f, craftStats(f, ncFile(f), ncEdits)))
	f.Add(marshal(f, sampleWalkAll()))
	f.Add([]byte{0x49, 0x1c, 0x19, 0x1c, 0x3c, 0xcc, 0x36, 2, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, err := thriftBuf(b).walkStruct(0, 0, nil)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("walk error %v is not ErrCorrupt", err)
		}
		for _, e := range []statsEdit{dropNullCount, dropStats} {
			edits := [][]statsEdit{{e, e, e, e}, nil, {keepStats, e}}
			out, serr := stripStats(b, edits)
			if serr != nil {
				if !errors.Is(serr, ErrCorrupt) {
					t.Fatalf("strip error %v is not ErrCorrupt", serr)
				}
				continue
			}
			checkStripped(t, out, edits)
		}
	})
}

// checkStripped asserts that out is a well-formed struct in which no chunk named by edits keeps
// what was stripped.
func checkStripped(t *testing.T, out []byte, edits [][]statsEdit) {
	t.Helper()
	err := thriftBuf(out).walkChunkMeta(nil, func(rg, col int, md []tfield) error {
		if rg >= len(edits) || col >= len(edits[rg]) || edits[rg][col] == keepStats {
			return nil
		}
		want := edits[rg][col]
		got, err := thriftBuf(out).chunkStatsEdit(md)
		if err == nil && got < want {
			t.Errorf("rg %d col %d: lacks %v after stripping %v", rg, col, got, want)
		}
		return err
	})
	if err != nil {
		t.Fatalf("stripped footer does not walk: %v", err)
	}
}

// rawFooter returns the encoded footer of the Parquet file data.
func rawFooter(t testing.TB, data []byte) []byte {
	t.Helper()
	f, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f.raw
}
