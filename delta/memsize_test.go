package delta

import (
	"fmt"
	"testing"
)

// TestStateBytesCountSharedMapsOnce: the checkpoint decoder shares one
// partition values' map between the files of a partition; the estimate
// counts it once, and a map of its own (parsed JSON) once per file.
func TestStateBytesCountSharedMapsOnce(t *testing.T) {
	parts := make([]map[string]*string, 10)
	for i := range parts {
		v := fmt.Sprintf("region-%02d", i)
		parts[i] = map[string]*string{"region": &v}
	}
	shared, own := &tableState{}, &tableState{}
	var files int64
	for i := range 1000 {
		a := &Add{Path: fmt.Sprintf("region=%02d/part-%04d.parquet", i%10, i), PartitionValues: parts[i%10]}
		shared.files = append(shared.files, a)
		b := *a
		v := *a.PartitionValues["region"]
		b.PartitionValues = map[string]*string{"region": &v}
		own.files = append(own.files, &b)
		files += addBytes(a)
	}
	mapCost := partitionBytes(parts[0])
	if got, want := stateActionBytes(shared), files+10*mapCost; got != want {
		t.Errorf("shared maps: %d bytes, want %d (10 maps)", got, want)
	}
	if got, want := stateActionBytes(own), files+1000*mapCost; got != want {
		t.Errorf("own maps: %d bytes, want %d (1,000 maps)", got, want)
	}
}
