package pqfile

import (
	"bytes"
	"errors"
	"testing"
)

func TestReadEntryRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte(entryMagic), bytes.Repeat([]byte{0}, 100), append(bytes.Repeat([]byte{0xff}, 40), entryMagic...)} {
		if _, err := ReadEntry(bytes.NewReader(b), int64(len(b)), 1000); !errors.Is(err, ErrBadEntry) {
			t.Errorf("ReadEntry(%d bytes) err = %v, want ErrBadEntry", len(b), err)
		}
	}
}
