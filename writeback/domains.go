package writeback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/delta"
)

// Domains and table properties of the writer features handled here.
const (
	domainRowTracking     = "delta.rowTracking"
	domainClustering      = "delta.clustering"
	configRowTrackingSusp = "delta.rowTrackingSuspended"
)

// rowTrackingActive: when the rowTracking feature is supported (and not
// suspended), every add must carry row ids [§Row Tracking].
func rowTrackingActive(snap *delta.Snapshot) bool {
	if !snap.Protocol().HasWriterFeature("rowTracking") {
		return false
	}
	return !strings.EqualFold(strings.TrimSpace(snap.Metadata().Configuration[configRowTrackingSusp]), "true")
}

// rowIDHighWaterMark returns the delta.rowTracking domain's
// rowIdHighWaterMark, -1 when the domain is absent (no ids assigned yet).
func rowIDHighWaterMark(snap *delta.Snapshot) (int64, error) {
	d, ok := snap.Domain(domainRowTracking)
	if !ok || d.Removed {
		return -1, nil
	}
	var cfg struct {
		HWM *json.Number `json:"rowIdHighWaterMark"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(d.Configuration)))
	dec.UseNumber()
	if err := dec.Decode(&cfg); err != nil || cfg.HWM == nil {
		return 0, fmt.Errorf("%w: table %s version %d: bad %s domain configuration %q",
			delta.ErrCorruptLog, snap.Table(), snap.Version(), domainRowTracking, d.Configuration)
	}
	n, err := cfg.HWM.Int64()
	if err != nil {
		return 0, fmt.Errorf("%w: table %s version %d: bad rowIdHighWaterMark %q",
			delta.ErrCorruptLog, snap.Table(), snap.Version(), cfg.HWM.String())
	}
	return n, nil
}

// rowTrackingDomain is the domainMetadata action recording a new mark.
func rowTrackingDomain(hwm int64) *delta.DomainMetadata {
	return &delta.DomainMetadata{
		Domain:        domainRowTracking,
		Configuration: `{"rowIdHighWaterMark":` + strconv.FormatInt(hwm, 10) + `}`,
	}
}

// clusteringColumns maps the lower-cased dotted logical paths of the
// table's clustering columns to their physical paths (the delta.clustering
// domain lists physical paths), so that they always get statistics.
func clusteringColumns(snap *delta.Snapshot, schema *delta.StructType) map[string][]string {
	out := map[string][]string{}
	d, ok := snap.Domain(domainClustering)
	if !ok || d.Removed {
		return out
	}
	var cfg struct {
		Columns [][]string `json:"clusteringColumns"`
	}
	if json.Unmarshal([]byte(d.Configuration), &cfg) != nil {
		return out
	}
	nm := delta.NewNameMap(schema, snap.Metadata().ColumnMapping())
	for _, phys := range cfg.Columns {
		if logical, ok := nm.LogicalPath(phys); ok {
			out[strings.ToLower(dotted(logical))] = phys
		}
	}
	return out
}
