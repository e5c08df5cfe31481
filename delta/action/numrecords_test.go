package action

import "testing"

// TestAddNumRecordsTopLevelOnly checks that numRecords is read from the top
// level of the stats object only: a column named "numRecords" has its
// min/max/nullCount under that key too, and the protocol fixes no key order.
func TestAddNumRecordsTopLevelOnly(t *testing.T) {
	tests := []struct {
		name  string
		stats string
		want  int64
		ok    bool
	}{
		{"spark order", `{"numRecords":10,"minValues":{"numRecords":1}}`, 10, true},
		{"column first", `{"maxValues":{"numRecords":99},"minValues":{"numRecords":1},"nullCount":{"numRecords":0},"numRecords":10}`, 10, true},
		{"nested column only", `{"minValues":{"s":{"numRecords":3}}}`, 0, false},
		{"spaces", `{ "numRecords" : 7 }`, 7, true},
		{"string value holding the key", `{"minValues":{"s":"\"numRecords\":3"},"numRecords":4}`, 4, true},
		{"int64 max", `{"numRecords":9223372036854775807}`, 9223372036854775807, true},
		{"null", `{"numRecords":null}`, 0, false},
		{"absent", `{"minValues":{}}`, 0, false},
		{"not json", `garbage`, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &Add{Path: "p", Stats: tc.stats}
			n, ok := a.NumRecords()
			if n != tc.want || ok != tc.ok {
				t.Errorf("NumRecords(%s) = %d, %v; want %d, %v", tc.stats, n, ok, tc.want, tc.ok)
			}
		})
	}
}
