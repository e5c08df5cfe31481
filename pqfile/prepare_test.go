package pqfile

import "testing"

// TestPrepareGoesTheWholeWay checks that Prepare's footer is decoded and checked, not refused
// early: a footer that failed to encode or decode would leave the codecs it is for unmade.
func TestPrepareGoesTheWholeWay(t *testing.T) {
	rw, err := prepare()
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if rw {
		t.Fatal("prepare: a file in its own shape was found to need reshaping")
	}
	Prepare()
	Prepare() // once per process; a second call is free
}
