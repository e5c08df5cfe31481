package pqfile

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go/format"
)

// FuzzThriftWalk feeds arbitrary bytes to the compact-protocol walker and the statistics editor
// as a footer, and to the footer limits (limits.go). Nothing may panic; errors are ErrCorrupt
// (or ErrLimit for the limits); when stripping succeeds, its output
// walks again, ends where it should, and the edited chunks lack what was stripped.
func FuzzThriftWalk(f *testing.F) {
	f.Add(rawFooter(f, ncFile(f)))
	f.Add(rawFooter(f, craftStats(f, ncFile(f), ncEdits)))
	f.Add(marshal(f, sampleWalkAll()))
	f.Add([]byte{0x49, 0x1c, 0x19, 0x1c, 0x3c, 0xcc, 0x36, 2, 0, 0, 0, 0, 0})
	f.Add(dupStats(f, rawFooter(f, ncFile(f))))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, err := thriftBuf(b).walkStruct(0, 0, nil)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("walk error %v is not ErrCorrupt", err)
		}
		if lerr := checkLimits(b, DefaultLimits); lerr != nil && !errors.Is(lerr, ErrCorrupt) && !errors.Is(lerr, ErrLimit) {
			t.Fatalf("limits error %v is neither ErrCorrupt nor ErrLimit", lerr)
		} else if err != nil && lerr == nil {
			t.Fatalf("the limits walk accepted what the walker refuses: %v", err)
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

// dupStats returns the encoded footer b with the statistics of its first column chunk repeated
// (a second field 12 right after the first), as hostile input may have it.
func dupStats(t testing.TB, b []byte) []byte {
	t.Helper()
	var first *tfield
	err := thriftBuf(b).walkChunkMeta(nil, func(rg, col int, md []tfield) error {
		if k := slices.IndexFunc(md, isStats); k >= 0 && first == nil {
			first = &md[k]
		}
		return nil
	})
	if err != nil || first == nil {
		t.Fatalf("no statistics in footer: %v", err)
	}
	dup := appendFieldHeader(nil, idMetaStatistics, idMetaStatistics, tStruct) // long form: delta 0
	dup = append(dup, b[first.value:first.end]...)
	out := applySplices(b, []splice{{start: first.end, end: first.end, with: dup}})
	var meta format.FileMetaData
	if err := decodeFooter(out, &meta); err != nil {
		t.Fatalf("footer with repeated statistics: %v", err)
	}
	if e, err := statsEdits(out, &meta); err != nil || hasEdits(e) {
		t.Fatalf("footer with repeated statistics: edits %v, %v", e, err)
	}
	return out
}
