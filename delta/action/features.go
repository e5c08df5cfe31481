package action

import (
	"slices"
	"strconv"
	"strings"
)

// featuresWriterVersion is the writer version from which a protocol lists
// its features instead of implying them [PROTOCOL.md "Table Features"].
const featuresWriterVersion = 7

// legacyWriterFeatures are the features implied by writer versions < 7.
var legacyWriterFeatures = [][]string{
	2: {"appendOnly", "invariants"},
	3: {"checkConstraints"},
	4: {"changeDataFeed", "generatedColumns"},
	5: {"columnMapping"},
	6: {"identityColumns"},
}

// SupportedWriterFeatures lists the writer features the protocol supports: the
// explicit list (plus reader features) at writer 7, else the legacy
// implications of the writer version (and reader version 2: columnMapping).
func (p *Protocol) SupportedWriterFeatures() []string {
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	if p.MinWriterVersion >= featuresWriterVersion {
		add(p.WriterFeatures...)
		add(p.ReaderFeatures...)
		return out
	}
	for v := 2; v <= p.MinWriterVersion && v < len(legacyWriterFeatures); v++ {
		add(legacyWriterFeatures[v]...)
	}
	if p.MinReaderVersion == 2 {
		add("columnMapping")
	}
	return out
}

// HasReaderFeature reports whether the protocol supports the named reader
// feature: listed in ReaderFeatures, or implied by a legacy reader version
// (2 implies columnMapping). False on a nil protocol.
func (p *Protocol) HasReaderFeature(name string) bool {
	if p == nil {
		return false
	}
	if p.MinReaderVersion == 2 && name == "columnMapping" {
		return true
	}
	return slices.Contains(p.ReaderFeatures, name)
}

// HasWriterFeature reports whether the protocol supports the named writer
// feature: listed in WriterFeatures (or ReaderFeatures) at writer version
// 7, or implied by a legacy writer version (see CheckWritable). Supported
// is not active: e.g. appendOnly is active only when delta.appendOnly=true.
// False on a nil protocol.
func (p *Protocol) HasWriterFeature(name string) bool {
	if p == nil {
		return false
	}
	return slices.Contains(p.SupportedWriterFeatures(), name)
}

// Table properties read by the engine [§In-Commit Timestamps, §Checkpoints].
const (
	configICT                = "delta.enableInCommitTimestamps"
	configICTVersion         = "delta.inCommitTimestampEnablementVersion"
	configICTTimestamp       = "delta.inCommitTimestampEnablementTimestamp"
	configCheckpointInterval = "delta.checkpointInterval"
	defaultCheckpointEvery   = 10
)

// InCommitTimestampsEnabled reports whether delta.enableInCommitTimestamps
// is "true" (any case).
func (m *Metadata) InCommitTimestampsEnabled() bool {
	return strings.EqualFold(strings.TrimSpace(m.Configuration[configICT]), "true")
}

// ICTEnablement returns the version and timestamp (ms) from which in-commit
// timestamps apply, when ICT was enabled after table creation; ok is true
// only when both properties are present and are integers. ok false with
// ICT enabled means ICT applies to the whole history.
func (m *Metadata) ICTEnablement() (version, ts int64, ok bool) {
	vs, vok := m.Configuration[configICTVersion]
	tss, tok := m.Configuration[configICTTimestamp]
	if !vok || !tok {
		return 0, 0, false
	}
	v, err1 := strconv.ParseInt(strings.TrimSpace(vs), 10, 64)
	t, err2 := strconv.ParseInt(strings.TrimSpace(tss), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return v, t, true
}

// CheckpointInterval returns delta.checkpointInterval, or 10 when it is
// absent, not an integer or not positive.
func (m *Metadata) CheckpointInterval() int {
	n, err := strconv.Atoi(strings.TrimSpace(m.Configuration[configCheckpointInterval]))
	if err != nil || n <= 0 {
		return defaultCheckpointEvery
	}
	return n
}
